package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// newExecution starts the record of one run of handler on one message,
// whose guarded steps (run.Begin, step.Answer) record writes to the execution log.
func (c *Consumers) newExecution(handler, messageID string) *telemetry.Run {
	return telemetry.NewRun(handler, messageID)
}

// record counts the run and writes it to the execution log, even when the
// delivery's context is cancelled, and returns runErr unchanged.
func (c *Consumers) record(ctx context.Context, e *telemetry.Run, runErr error) error {
	c.metrics.Run(ctx, e, runErr)
	if c.logger != nil {
		// The router logs the error itself: here only whether there was one.
		c.logger.InfoContext(ctx, "execution", "handler", e.Handler, "message_id", e.MessageID,
			"order_id", e.OrderID.UUID.String(), "outcomes", summary(e.Results), "failed", runErr != nil)
	}
	outcomes, err := json.Marshal(e.Results)
	if err != nil {
		return fmt.Errorf("encode execution outcomes: %w", err)
	}
	var errText pgtype.Text
	if runErr != nil {
		errText = pgtype.Text{String: runErr.Error(), Valid: true}
	}
	row := queries.ExecutionInsertParams{Handler: e.Handler, MessageID: e.MessageID, OrderID: e.OrderID, Outcomes: outcomes, Error: errText}
	if c.execLog != nil { // a batch: written with the batch's (Batched)
		c.execLog.add(row)
		return runErr
	}
	if err := c.q.ExecutionInsert(context.WithoutCancel(ctx), row); err != nil && runErr == nil {
		return fmt.Errorf("write execution log: %w", err)
	}
	return runErr
}

// recordBatched is record for a run of a batch, first failing with runErr
// the steps (Run.Begin) it left open.
func (c *Consumers) recordBatched(ctx context.Context, e *telemetry.Run, runErr error) error {
	e.Close(runErr)
	return c.record(ctx, e, runErr)
}

// summary is the run's answers for the log line: "paid=applied commission=applied".
func summary(results []effect.Result) string {
	parts := make([]string, len(results))
	for i, r := range results {
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

// Batched wraps a batch handler so that its batch's execution log is one
// statement once it returns, not a commit per run (in batch mode, the largest
// cost left per message). A crash before it loses a batch's log lines, but
// nothing is acked yet, so the batch comes again and is logged then. A failed
// write is every message's (transient) error: the batch is read again and its
// guards answer already_applied.
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
		// The batch's context holds a with-effects reader's transaction.
		if err := c.q.ExecutionInsertBatch(context.WithoutCancel(msgs[0].Context()), p); err != nil {
			err = fmt.Errorf("write the execution log of a batch of %d: %w", len(msgs), err)
			for i := range errs {
				errs[i] = err
			}
		}
		return errs
	}
}
