package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// Attributes of an effect span. In Jaeger, search for
// idempotency.outcome=already_applied to see every duplicate a guard absorbed.
const (
	// AttrEffect names the effect: paid, commission, notification_sent...
	AttrEffect = attribute.Key("idempotency.effect")
	// AttrTechnique names the guard: state_check, unique_ledger_key, inbox...
	AttrTechnique = attribute.Key("idempotency.technique")
	// AttrOutcome is the guard's answer: applied, already_applied, not_applicable.
	AttrOutcome = attribute.Key("idempotency.outcome")
)

// tracerName is the instrumentation scope of the flow's own spans.
const tracerName = "github.com/orderpaid/orderpaid"

// TracerFrom returns the flow's tracer from the span in ctx: the no-op when
// there is none, so work outside any trace makes no spans and costs nothing.
func TracerFrom(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(tracerName)
}

// Step is one guarded step in flight: its span ("effect <name>") and the
// counters its answer goes into. End it with End (the guard answered) or
// Fail (the step could not run); whichever comes first wins.
type Step struct {
	ctx       context.Context
	span      trace.Span
	metrics   *Metrics
	effect    string
	technique effect.Technique
	ended     bool
}

// StartStep starts the span of the step that applies effectName, protected
// by technique t, as a child of the span in ctx. Work done with the returned
// context (queries, HTTP calls, an outbox write) nests under it. m may be nil.
func StartStep(ctx context.Context, m *Metrics, effectName string, t effect.Technique) (context.Context, *Step) {
	ctx, span := TracerFrom(ctx).Start(ctx, "effect "+effectName,
		trace.WithAttributes(AttrEffect.String(effectName), AttrTechnique.String(string(t))))
	return ctx, &Step{ctx: ctx, span: span, metrics: m, effect: effectName, technique: t}
}

// Effect is the name of the effect the step applies.
func (s *Step) Effect() string { return s.effect }

// Technique is the guard protecting the step.
func (s *Step) Technique() effect.Technique { return s.technique }

// End records the guard's answer on the span and in the counters, and ends
// the span.
func (s *Step) End(o effect.Outcome) {
	if s.ended {
		return
	}
	s.ended = true
	s.span.SetAttributes(AttrOutcome.String(string(o)))
	s.metrics.Effect(s.ctx, s.effect, s.technique, o)
	s.span.End()
}

// Fail ends the span with err, when the step stopped before its guard could
// answer. It does nothing after End.
func (s *Step) Fail(err error) {
	if s.ended {
		return
	}
	s.ended = true
	if err != nil {
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End()
}
