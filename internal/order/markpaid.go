package order

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// MarkPaid moves the order from pending to paid and records the transition,
// inside the caller's transaction.
//
// Effect protected: "the order was marked paid", and everything that hangs
// off that transition (the confirmation is written in the same transaction).
// Technique: a state check, UPDATE ... WHERE id = $1 AND status = 'pending'.
// Under READ COMMITTED a concurrent second UPDATE waits for the row lock,
// re-evaluates its WHERE against the committed row and matches nothing: one
// transaction moves the order, however many deliveries race. A SELECT then an
// UPDATE would let both racers see 'pending' and both "transition".
//
// It returns Applied when this call moved the order, AlreadyApplied when it
// was paid (or refund_failed: the money is still with the merchant),
// NotApplicable when refunded (terminal), ErrNotFound for no such order.
func MarkPaid(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, queries.Order, error) {
	o, err := q.OrderMarkPaid(ctx, orderID)
	if err == nil {
		err = q.OrderTransitionInsert(ctx, queries.OrderTransitionInsertParams{
			OrderID: orderID, FromStatus: StatusPending, ToStatus: StatusPaid, MessageID: messageID,
		})
	}
	if err == nil {
		return effect.Applied, o, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", queries.Order{}, fmt.Errorf("mark order %s paid: %w", orderID, err)
	}
	// Nothing matched. A statement of its own sees what moved the order.
	o, err = q.OrderGet(ctx, orderID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", queries.Order{}, ErrNotFound
	case err != nil:
		return "", queries.Order{}, fmt.Errorf("get order %s: %w", orderID, err)
	case o.Status == StatusRefunded:
		return effect.NotApplicable, o, nil // terminal: a late payment event changes nothing
	}
	return effect.AlreadyApplied, o, nil
}

// MarkPaidUnguarded is the mistake MarkPaid prevents, which the lab wires in
// its place (--without state-check): an unconditional UPDATE that
// "transitions" the order, and records a transition, on every execution.
func MarkPaidUnguarded(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, queries.Order, error) {
	o, err := q.OrderMarkPaidUnconditional(ctx, orderID)
	if err == nil {
		err = q.OrderTransitionInsert(ctx, queries.OrderTransitionInsertParams{
			OrderID: orderID, FromStatus: StatusPending, ToStatus: StatusPaid, MessageID: messageID,
		})
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return "", queries.Order{}, ErrNotFound
	}
	if err != nil {
		return "", queries.Order{}, fmt.Errorf("mark order %s paid: %w", orderID, err)
	}
	return effect.Applied, o, nil
}

// MarkPaidBatch is MarkPaid for distinct orders in two statements: the state
// check as one UPDATE ... WHERE id = ANY(ids) AND status = 'pending', then one
// INSERT of the transitions it made, messageIDs[i] moving ids[i]. It returns
// the orders it moved.
func MarkPaidBatch(ctx context.Context, q *queries.Queries, ids []uuid.UUID, messageIDs []string) (map[uuid.UUID]bool, error) {
	moved, err := q.OrderMarkPaidBatch(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("mark %d orders paid: %w", len(ids), err)
	}
	if len(moved) == 0 {
		return map[uuid.UUID]bool{}, nil
	}
	by := make(map[uuid.UUID]bool, len(moved))
	for _, id := range moved {
		by[id] = true
	}
	var t queries.OrderTransitionInsertBatchParams
	for i, id := range ids {
		if by[id] {
			t.OrderIds, t.MessageIds = append(t.OrderIds, id), append(t.MessageIds, messageIDs[i])
		}
	}
	if err := q.OrderTransitionInsertBatch(ctx, t); err != nil {
		return nil, fmt.Errorf("record %d transitions: %w", len(t.OrderIds), err)
	}
	return by, nil
}
