package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// Metric names (OpenTelemetry names; on /metrics dots become underscores and
// counters get _total, the histogram _seconds).
const (
	MetricEffects           = "orderpaid.effects"                    // counter: guard answers by effect, technique, outcome
	MetricDuplicates        = "orderpaid.duplicates.suppressed"      // counter: already_applied answers by effect, technique
	MetricExecutions        = "orderpaid.handler.executions"         // counter: handler runs by handler, result
	MetricRelayLag          = "orderpaid.outbox.relay.lag"           // histogram (s): outbox write to broker publish
	MetricOutboxBacklog     = "orderpaid.outbox.backlog"             // gauge: outbox rows not yet relayed
	MetricPoisonPending     = "orderpaid.poison.pending"             // gauge: poison messages not yet reprocessed
	MetricSignatureFailures = "orderpaid.webhook.signature.failures" // counter: rejected webhooks by reason
	MetricSlotRetained      = "orderpaid.outbox.slot.retained"       // gauge (By): WAL the logical relay's slot keeps
	MetricSlotUnconfirmed   = "orderpaid.outbox.slot.unconfirmed"    // gauge (By): WAL the slot's reader has not confirmed
)

const (
	attrHandler = attribute.Key("handler")
	attrResult  = attribute.Key("result")
	attrReason  = attribute.Key("reason")
	meterName   = "github.com/orderpaid/orderpaid"
)

// Metrics are the flow's instruments. A nil *Metrics records nothing, so
// code built without telemetry (most tests) needs no special case.
type Metrics struct {
	effects, duplicates, executions, signatureFailures metric.Int64Counter
	relayLag                                           metric.Float64Histogram
}

// NewMetrics creates the instruments on mp.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	m := mp.Meter(meterName)
	var errs [5]error
	var out Metrics
	out.effects, errs[0] = m.Int64Counter(MetricEffects, metric.WithUnit("{answer}"),
		metric.WithDescription("Answers of the idempotency guards: applied, already_applied or not_applicable, by effect and technique."))
	out.duplicates, errs[1] = m.Int64Counter(MetricDuplicates, metric.WithUnit("{duplicate}"),
		metric.WithDescription("Attempts at an effect that had already happened and that a guard turned into a no-op."))
	out.executions, errs[2] = m.Int64Counter(MetricExecutions, metric.WithUnit("{execution}"),
		metric.WithDescription("Handler runs, by handler and result (ok or error); compare with the effects."))
	out.signatureFailures, errs[3] = m.Int64Counter(MetricSignatureFailures, metric.WithUnit("{request}"),
		metric.WithDescription("Webhooks refused for a missing, malformed, expired or wrong signature."))
	out.relayLag, errs[4] = m.Float64Histogram(MetricRelayLag, metric.WithUnit("s"),
		metric.WithDescription("Time from the outbox write (in the business transaction) to the relay's publish to the broker."),
		metric.WithExplicitBucketBoundaries(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("create metric instruments: %w", err)
	}
	return &out, nil
}

// Effect counts one guard answer, already_applied also as a duplicate.
func (m *Metrics) Effect(ctx context.Context, effectName string, t effect.Technique, o effect.Outcome) {
	if m == nil {
		return
	}
	attrs := metric.WithAttributes(AttrEffect.String(effectName), AttrTechnique.String(string(t)))
	m.effects.Add(ctx, 1, attrs, metric.WithAttributes(AttrOutcome.String(string(o))))
	if o == effect.AlreadyApplied {
		m.duplicates.Add(ctx, 1, attrs)
	}
}

// Run counts one handler run (runErr nil: ok) and its steps' answers.
func (m *Metrics) Run(ctx context.Context, r *Run, runErr error) {
	if m == nil {
		return
	}
	for _, res := range r.Results {
		m.Effect(ctx, res.Effect, res.Technique, res.Outcome)
	}
	result := "ok"
	if runErr != nil {
		result = "error"
	}
	m.executions.Add(ctx, 1, metric.WithAttributes(attrHandler.String(r.Handler), attrResult.String(result)))
}

// RelayLag records a message's wait from outbox write to publish on topic.
func (m *Metrics) RelayLag(ctx context.Context, topic string, d time.Duration) {
	if m == nil {
		return
	}
	m.relayLag.Record(ctx, d.Seconds(), metric.WithAttributes(semconv.MessagingDestinationName(topic)))
}

// SignatureFailure counts one refused webhook: missing, malformed, expired, mismatch.
func (m *Metrics) SignatureFailure(ctx context.Context, reason string) {
	if m == nil {
		return
	}
	m.signatureFailures.Add(ctx, 1, metric.WithAttributes(attrReason.String(reason)))
}
