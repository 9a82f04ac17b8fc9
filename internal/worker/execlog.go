package worker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/db"
	"github.com/orderpaid/orderpaid/internal/effect"
)

// execution is one handler run: what it was given and what each guard said.
type execution struct {
	handler   string
	messageID string
	orderID   uuid.NullUUID
	results   []effect.Result
}

func (e *execution) add(effectName string, t effect.Technique, o effect.Outcome) {
	e.results = append(e.results, effect.Result{Effect: effectName, Technique: t, Outcome: o})
}

// record writes the run to the execution log and returns runErr unchanged.
// The log write uses a context that outlives a cancelled delivery, so a run
// cut short by shutdown is still counted.
func (c *Consumers) record(ctx context.Context, e *execution, runErr error) error {
	outcomes, err := json.Marshal(e.results)
	if err != nil {
		return fmt.Errorf("encode execution outcomes: %w", err)
	}
	var errText pgtype.Text
	if runErr != nil {
		errText = pgtype.Text{String: runErr.Error(), Valid: true}
	}
	if err := c.q.ExecutionInsert(context.WithoutCancel(ctx), db.ExecutionInsertParams{
		Handler:   e.handler,
		MessageID: e.messageID,
		OrderID:   e.orderID,
		Outcomes:  outcomes,
		Error:     errText,
	}); err != nil && runErr == nil {
		return fmt.Errorf("write execution log: %w", err)
	}
	return runErr
}
