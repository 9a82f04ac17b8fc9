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
	AttrEffect    = attribute.Key("idempotency.effect")    // paid, commission, notification_sent...
	AttrTechnique = attribute.Key("idempotency.technique") // the guard: state_check, unique_ledger_key, inbox...
	AttrOutcome   = attribute.Key("idempotency.outcome")   // applied, already_applied, not_applicable
)

// tracerName is the instrumentation scope of the flow's own spans.
const tracerName = "github.com/orderpaid/orderpaid"

// TracerFrom returns the flow's tracer from the span in ctx: the no-op when
// there is none, so work outside any trace makes no spans and costs nothing.
func TracerFrom(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(tracerName)
}

// Step is one guarded step in flight, its span "effect <name>": End it with
// the guard's answer, or Fail it; whichever comes first wins.
type Step struct {
	ctx       context.Context
	span      trace.Span
	metrics   *Metrics
	effect    string
	technique effect.Technique
	ended     bool
	run       *Run // the run whose answers End adds to; nil: none
}

// StartStep starts the span of the step that applies effectName under
// technique t; work done with the returned context nests under it. m may be nil.
func StartStep(ctx context.Context, m *Metrics, effectName string, t effect.Technique) (context.Context, *Step) {
	ctx, span := TracerFrom(ctx).Start(ctx, "effect "+effectName,
		trace.WithAttributes(AttrEffect.String(effectName), AttrTechnique.String(string(t))))
	return ctx, &Step{ctx: ctx, span: span, metrics: m, effect: effectName, technique: t}
}

// End records the guard's answer on the span and in the counters.
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

// Answer ends the step with o, or fails it with err, and returns err:
// `ctx, step := run.Begin(...)`, the guard's call, `err = step.Answer(o, err)`.
func (s *Step) Answer(o effect.Outcome, err error) error {
	if err != nil {
		s.Fail(err)
		return err
	}
	s.End(o)
	return nil
}

// Fail ends the span with err, the guard having not answered; not after End.
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

// NewRun starts the run of handler on the message messageID.
func NewRun(handler, messageID string) *Run {
	return &Run{Handler: handler, MessageID: messageID}
}

// Answer keeps the answer o of a step done for many runs at once since
// started (a batch's statement), with a span covering that time.
func (r *Run) Answer(ctx context.Context, effectName string, t effect.Technique, o effect.Outcome, started time.Time) {
	_, span := TracerFrom(ctx).Start(ctx, "effect "+effectName, trace.WithTimestamp(started),
		trace.WithAttributes(AttrEffect.String(effectName), AttrTechnique.String(string(t)), AttrOutcome.String(string(o))))
	span.End()
	r.Results = append(r.Results, effect.Result{Effect: effectName, Technique: t, Outcome: o})
}

// Begin starts a step of r, its span "effect <name>", to be ended with the
// guard's answer (Step.Answer), then kept in r.Results; Close fails those
// left open.
func (r *Run) Begin(ctx context.Context, effectName string, t effect.Technique) (context.Context, *Step) {
	ctx, s := StartStep(ctx, nil, effectName, t)
	s.run = r
	r.open = append(r.open, s)
	return ctx, s
}

// Close fails with err every step begun and not ended.
func (r *Run) Close(err error) {
	for _, s := range r.open {
		s.Fail(err)
	}
	r.open = nil
}
