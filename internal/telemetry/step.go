package telemetry

import (
	"context"
	"time"

	"github.com/google/uuid"

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
	run       *Run // the run whose answers End adds to; nil: none
}

// StartStep starts the span of the step that applies effectName, protected
// by technique t, as a child of the span in ctx. Work done with the returned
// context (queries, HTTP calls, an outbox write) nests under it. m may be nil.
func StartStep(ctx context.Context, m *Metrics, effectName string, t effect.Technique) (context.Context, *Step) {
	ctx, span := TracerFrom(ctx).Start(ctx, "effect "+effectName,
		trace.WithAttributes(AttrEffect.String(effectName), AttrTechnique.String(string(t))))
	return ctx, &Step{ctx: ctx, span: span, metrics: m, effect: effectName, technique: t}
}

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
	if s.run != nil {
		s.run.Results = append(s.run.Results, effect.Result{Effect: s.effect, Technique: s.technique, Outcome: o})
	}
}

// Answer ends the step with the guard's answer o, or with err when the
// guard could not answer, and returns err: the straight-line form of a
// step, `ctx, step := run.Begin(...)`, the guard's call, then
// `err = step.Answer(o, err)`.
func (s *Step) Answer(o effect.Outcome, err error) error {
	if err != nil {
		s.Fail(err)
		return err
	}
	s.End(o)
	return nil
}

// Fail ends the span with err, when the step stopped before its guard could
// answer. It does nothing after End.
func (s *Step) Fail(err error) {
	if !s.ended {
		s.ended = true
		EndSpan(s.span, err)
	}
}

// EndSpan ends span, failed with err unless err is nil.
func EndSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Run is one handler run on one message: what it was given, and the answer
// of each guarded step, as the execution log stores them.
type Run struct {
	Handler   string
	MessageID string
	OrderID   uuid.NullUUID
	Results   []effect.Result
	open      []*Step // begun with Begin; Close fails any left open
}

// NewRun starts the run of handler on the message messageID. Its steps'
// answers are counted when the run is recorded (Metrics.Run).
func NewRun(handler, messageID string) *Run {
	return &Run{Handler: handler, MessageID: messageID}
}

// Step runs fn as the guarded step that applies effectName, protected by
// technique t: one span, "effect <name>", encloses fn's work (fn gets its
// context) and carries the answer fn returns, which is counted and kept in
// r.Results; an error fails the span instead.
func (r *Run) Step(ctx context.Context, effectName string, t effect.Technique, fn func(ctx context.Context) (effect.Outcome, error)) (effect.Outcome, error) {
	ctx, span := TracerFrom(ctx).Start(ctx, "effect "+effectName,
		trace.WithAttributes(AttrEffect.String(effectName), AttrTechnique.String(string(t))))
	defer span.End()
	o, err := fn(ctx)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return "", err
	}
	span.SetAttributes(AttrOutcome.String(string(o)))
	r.Results = append(r.Results, effect.Result{Effect: effectName, Technique: t, Outcome: o})
	return o, nil
}

// Answer keeps the answer o of a step of r whose work was done for many
// runs at once, since started (a batch's statement): its span covers that
// time, under ctx's span, and carries o.
func (r *Run) Answer(ctx context.Context, effectName string, t effect.Technique, o effect.Outcome, started time.Time) {
	_, span := TracerFrom(ctx).Start(ctx, "effect "+effectName, trace.WithTimestamp(started),
		trace.WithAttributes(AttrEffect.String(effectName), AttrTechnique.String(string(t)), AttrOutcome.String(string(o))))
	span.End()
	r.Results = append(r.Results, effect.Result{Effect: effectName, Technique: t, Outcome: o})
}

// Begin starts a step of r to be ended later (End adds its answer to
// r.Results): for a step whose answer comes from a statement for many
// runs, as in batch mode. Close fails the steps left open.
func (r *Run) Begin(ctx context.Context, effectName string, t effect.Technique) (context.Context, *Step) {
	ctx, s := StartStep(ctx, nil, effectName, t)
	s.run = r
	r.open = append(r.open, s)
	return ctx, s
}

// Close fails, with err, every step begun and not ended: the run stopped
// in the middle of them.
func (r *Run) Close(err error) {
	for _, s := range r.open {
		s.Fail(err)
	}
	r.open = nil
}
