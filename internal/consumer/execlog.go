package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// execution is one handler run: what it was given and what each guard said.
type execution struct {
	handler   string
	messageID string
	orderID   uuid.NullUUID
	results   []effect.Result
	metrics   *telemetry.Metrics
	// steps are the guarded steps begun; record closes any left open.
	steps []*telemetry.Step
}

// newExecution starts the record of one run of handler on one message.
func (c *Consumers) newExecution(handler, messageID string) *execution {
	return &execution{handler: handler, messageID: messageID, metrics: c.metrics}
}

// start begins the run of handler on msg: msg's context, and the run's
// record.
func (c *Consumers) start(msg *message.Message, handler string) (context.Context, *execution) {
	return msg.Context(), c.newExecution(handler, msg.UUID)
}

// forOrder names the order the run is about, in its record and in ctx's
// spans and logs.
func (e *execution) forOrder(ctx context.Context, orderID uuid.UUID) context.Context {
	e.orderID = uuid.NullUUID{UUID: orderID, Valid: true}
	return telemetry.WithOrderID(ctx, orderID.String())
}

// step runs fn as the guarded step effectName of the run, protected by
// technique t: its span "effect <name>" encloses fn's work, and the guard's
// answer fn returns is recorded (the execution log, the span's
// idempotency.outcome, the effect counters). A step whose fn failed stays
// open; record closes it with the run's error.
func (e *execution) step(ctx context.Context, effectName string, t effect.Technique, fn func(ctx context.Context) (effect.Outcome, error)) (effect.Outcome, error) {
	ctx, s := e.begin(ctx, effectName, t)
	outcome, err := fn(ctx)
	if err != nil {
		return "", err
	}
	s.end(outcome)
	return outcome, nil
}

func (e *execution) add(effectName string, t effect.Technique, o effect.Outcome) {
	e.results = append(e.results, effect.Result{Effect: effectName, Technique: t, Outcome: o})
}

// step is one guarded step of a run, in flight.
type step struct {
	*telemetry.Step
	run *execution
}

// begin starts a guarded step: its span "effect <name>" opens now, as a child
// of the span in ctx, so the step's queries and calls nest under it. Do the
// step's work with the returned context and report the guard's answer with
// end.
func (e *execution) begin(ctx context.Context, effectName string, t effect.Technique) (context.Context, step) {
	ctx, s := telemetry.StartStep(ctx, e.metrics, effectName, t)
	e.steps = append(e.steps, s)
	return ctx, step{Step: s, run: e}
}

// end records the guard's answer: in the run's results (the execution log),
// on the step's span (idempotency.outcome) and in the effect counters.
func (s step) end(o effect.Outcome) {
	s.run.add(s.Effect(), s.Technique(), o)
	s.Step.End(o)
}

// record writes the run to the execution log and returns runErr unchanged.
// The log write uses a context that outlives a cancelled delivery, so a run
// cut short by shutdown is still counted. Steps the run began but did not
// end (it failed in the middle of one) are closed with runErr.
func (c *Consumers) record(ctx context.Context, e *execution, runErr error) error {
	for _, s := range e.steps {
		s.Fail(runErr)
	}
	c.metrics.Execution(ctx, e.handler, runErr)
	if c.logger != nil {
		// The error itself is returned, and the router logs it: here only
		// whether the run failed.
		c.logger.InfoContext(ctx, "execution", "handler", e.handler, "message_id", e.messageID,
			"order_id", e.orderID.UUID.String(), "outcomes", e.summary(), "failed", runErr != nil)
	}
	outcomes, err := json.Marshal(e.results)
	if err != nil {
		return fmt.Errorf("encode execution outcomes: %w", err)
	}
	var errText pgtype.Text
	if runErr != nil {
		errText = pgtype.Text{String: runErr.Error(), Valid: true}
	}
	row := queries.ExecutionInsertParams{
		Handler:   e.handler,
		MessageID: e.messageID,
		OrderID:   e.orderID,
		Outcomes:  outcomes,
		Error:     errText,
	}
	if c.execLog != nil { // a batch: written with the batch's (Batched)
		c.execLog.add(row)
		return runErr
	}
	if err := c.q.ExecutionInsert(context.WithoutCancel(ctx), row); err != nil && runErr == nil {
		return fmt.Errorf("write execution log: %w", err)
	}
	return runErr
}

// summary is the run's answers in one short string for the log line, e.g.
// "paid=already_applied commission=already_applied".
func (e *execution) summary() string {
	parts := make([]string, len(e.results))
	for i, r := range e.results {
		parts[i] = r.Effect + "=" + string(r.Outcome)
	}
	return strings.Join(parts, " ")
}

// execBuffer holds the execution log of one batch until Batched writes it.
type execBuffer struct {
	mu   sync.Mutex
	rows []queries.ExecutionInsertParams
}

func (b *execBuffer) add(row queries.ExecutionInsertParams) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rows = append(b.rows, row)
}

// Batched wraps a batch handler (HandleOrderPaidBatch,
// HandleOrderConfirmedBatch) so that the execution log of its whole batch
// is written in one statement once it returns, instead of one statement
// and one commit per run: in batch mode the log's commits were the largest
// cost left per message. The log is written after the runs' effects, as
// each run's is in the per-message path; what changes is that a crash
// before the write loses the log lines of a whole batch, not of one run
// (none of its messages is acked yet, so the batch comes again and its
// runs are logged then; under CONSUMER_POSITION=with-effects the write is
// in the batch's transaction and goes with it). When the write fails, every message of the batch answers that error (it
// is transient): the batch is read again, and its guards answer
// already_applied.
func (c *Consumers) Batched(handle func(c *Consumers, msgs []*message.Message) []error) func(msgs []*message.Message) []error {
	return func(msgs []*message.Message) []error {
		cp := *c
		cp.execLog = &execBuffer{}
		errs := handle(&cp, msgs)
		rows := cp.execLog.rows
		if len(rows) == 0 {
			return errs
		}
		var p queries.ExecutionInsertBatchParams
		for _, r := range rows {
			p.Handlers = append(p.Handlers, r.Handler)
			p.MessageIds = append(p.MessageIds, r.MessageID)
			p.OrderIds = append(p.OrderIds, r.OrderID.UUID) // uuid.Nil when none: stored as NULL
			p.Outcomes = append(p.Outcomes, string(r.Outcomes))
			p.Errors = append(p.Errors, r.Error.String) // "" when none: stored as NULL
		}
		// On the batch's context, without its cancellation: a reader whose
		// position commits with the effects has its transaction there, and
		// the log commits with them (broker.BatchReader.WithEffects).
		if err := c.q.ExecutionInsertBatch(context.WithoutCancel(msgs[0].Context()), p); err != nil {
			err = fmt.Errorf("write the execution log of a batch of %d: %w", len(msgs), err)
			for i := range errs {
				errs[i] = err
			}
		}
		return errs
	}
}
