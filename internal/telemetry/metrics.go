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

// Effect counts one guard answer; already_applied also counts as a
// suppressed duplicate.
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

// Run counts one handler run, recorded with runErr (nil: it succeeded), and
// the answers of its steps.
func (m *Metrics) Run(ctx context.Context, r *Run, runErr error) {
	if m == nil {
		return
	}
	for _, res := range r.Results {
		m.Effect(ctx, res.Effect, res.Technique, res.Outcome)
	}
	m.Execution(ctx, r.Handler, runErr)
}

// Execution counts one handler run.
func (m *Metrics) Execution(ctx context.Context, handler string, runErr error) {
	if m == nil {
		return
	}
	result := "ok"
	if runErr != nil {
		result = "error"
	}
	m.executions.Add(ctx, 1, metric.WithAttributes(attrHandler.String(handler), attrResult.String(result)))
}

// RelayLag records how long a message waited between its outbox write and
// its publish to the broker on topic.
func (m *Metrics) RelayLag(ctx context.Context, topic string, d time.Duration) {
	if m == nil {
		return
	}
	m.relayLag.Record(ctx, d.Seconds(), metric.WithAttributes(semconv.MessagingDestinationName(topic)))
}

// SignatureFailure counts one refused webhook; reason is low-cardinality
// (missing, malformed, expired, mismatch).
func (m *Metrics) SignatureFailure(ctx context.Context, reason string) {
	if m == nil {
		return
	}
	m.signatureFailures.Add(ctx, 1, metric.WithAttributes(attrReason.String(reason)))
}

// ObserveSlot registers the gauges of the logical relay's slot
// (OUTBOX_RELAY=logical), read at each collection: the WAL it keeps on the
// server and the WAL its reader has not confirmed, in bytes. A relay that
// stops shows as both growing with every write to the database; alert on
// the first before the disk (or max_slot_wal_keep_size) does.
func ObserveSlot(mp metric.MeterProvider, lag func(context.Context) (retained, unconfirmed int64, ok bool, err error)) error {
	m := mp.Meter(meterName)
	retained, err := m.Int64ObservableGauge(MetricSlotRetained, metric.WithUnit("By"),
		metric.WithDescription("WAL the outbox's replication slot keeps on the server, since its restart position."))
	if err != nil {
		return fmt.Errorf("create %s: %w", MetricSlotRetained, err)
	}
	unconfirmed, err := m.Int64ObservableGauge(MetricSlotUnconfirmed, metric.WithUnit("By"),
		metric.WithDescription("WAL written since the outbox's replication slot last confirmed a position."))
	if err != nil {
		return fmt.Errorf("create %s: %w", MetricSlotUnconfirmed, err)
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if r, u, ok, err := lag(ctx); err == nil && ok {
			o.ObserveInt64(retained, r)
			o.ObserveInt64(unconfirmed, u)
		}
		return nil
	}, retained, unconfirmed)
	if err != nil {
		return fmt.Errorf("register slot gauges: %w", err)
	}
	return nil
}

// ObserveQueues registers the two gauges read from the database at each
// collection (each Prometheus scrape): the outbox backlog and the poison
// queue's pending messages (a nil outboxBacklog: not observed, the relay reads
// a slot). A failed query skips that observation: a missing
// sample says "unknown", and /readyz reports the database.
func ObserveQueues(mp metric.MeterProvider, outboxBacklog, poisonPending func(context.Context) (int64, error)) error {
	m := mp.Meter(meterName)
	backlog, err := m.Int64ObservableGauge(MetricOutboxBacklog, metric.WithUnit("{message}"),
		metric.WithDescription("Outbox rows written but not yet relayed to the broker."))
	if err != nil {
		return fmt.Errorf("create %s: %w", MetricOutboxBacklog, err)
	}
	poison, err := m.Int64ObservableGauge(MetricPoisonPending, metric.WithUnit("{message}"),
		metric.WithDescription("Messages in the poison queue not yet reprocessed."))
	if err != nil {
		return fmt.Errorf("create %s: %w", MetricPoisonPending, err)
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if outboxBacklog != nil {
			if n, err := outboxBacklog(ctx); err == nil {
				o.ObserveInt64(backlog, n)
			}
		}
		if n, err := poisonPending(ctx); err == nil {
			o.ObserveInt64(poison, n)
		}
		return nil
	}, backlog, poison)
	if err != nil {
		return fmt.Errorf("register queue gauges: %w", err)
	}
	return nil
}
