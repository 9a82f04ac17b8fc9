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
// Under READ COMMITTED a second, concurrent UPDATE blocks on the row lock,
// then re-evaluates its WHERE clause against the committed row, finds
// status = 'paid' and matches nothing; so exactly one transaction moves the
// order, however many deliveries race. A SELECT followed by an UPDATE would
// let both racers see 'pending' and both "transition".
//
// It returns Applied when this call moved the order, AlreadyApplied when the
// order was already paid (refund_failed too: it was paid, and its money is
// still with the merchant), NotApplicable when it was refunded
// (MarkRefunded: terminal), and ErrNotFound when there is no such order.
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
	// Nothing matched: the order is paid, refund_failed or refunded
	// already, or there is no such order. A statement of its own: it sees what the one that
	// moved it committed.
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

// MarkPaidBatch is MarkPaid for a set of distinct orders, in two
// statements: the state check as one UPDATE ... WHERE id = ANY(ids) AND
// status = 'pending' RETURNING id (OrderMarkPaidBatch), then the
// transitions of the orders it moved, each under the message that moved it
// (messageIDs[i] moves ids[i]), in one INSERT. It returns the orders it
// moved: their state check applied; every other order was paid or refunded
// before.
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
