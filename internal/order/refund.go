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

// StatusRefunded is the terminal status of an order whose payment was given
// back.
const StatusRefunded = "refunded"

// MarkRefunded moves the order to refunded and records the transition, inside
// the caller's transaction.
//
// Effect protected: "the order was refunded", and everything that hangs off
// it (its reservation released, its commission reversed, the customer told).
// Technique: a state check, as MarkPaid: the UPDATE matches only an order
// that is pending, paid or refund_failed, so of any number of concurrent or
// repeated refunds exactly one moves it. From pending too: the provider does
// not promise order, and a refund can arrive before the payment it reverses.
// From refund_failed: the provider refused our refund (MarkRefundFailed),
// and a person then refunded the order in its dashboard; the provider's
// payment.refunded, or orderpaid reconcile, records it here, and the
// compensation hanging off it runs then. refunded is terminal: MarkPaid then
// answers NotApplicable, so a late payment.succeeded brings nothing back to
// life.
//
// It returns Applied and the status the order was in when this call moved
// it, AlreadyApplied when it was refunded before, and ErrNotFound.
func MarkRefunded(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, string, error) {
	from, err := q.OrderMarkRefunded(ctx, orderID)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, getErr := Get(ctx, q, orderID); getErr != nil {
			return "", "", getErr
		}
		return effect.AlreadyApplied, StatusRefunded, nil
	}
	if err != nil {
		return "", "", fmt.Errorf("mark order %s refunded: %w", orderID, err)
	}
	err = q.OrderTransitionInsert(ctx, queries.OrderTransitionInsertParams{
		OrderID: orderID, FromStatus: from, ToStatus: StatusRefunded, MessageID: messageID,
	})
	if err != nil {
		return "", "", fmt.Errorf("record the refund of order %s: %w", orderID, err)
	}
	return effect.Applied, from, nil
}

// MarkRefundedUnguarded is the mistake MarkRefunded prevents, kept for the
// scenarios "--without state-check": an unconditional UPDATE that
// "refunds" the order on every execution, and records a transition each
// time, whatever the order's state.
func MarkRefundedUnguarded(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, string, error) {
	from, err := q.OrderMarkRefundedUnconditional(ctx, orderID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("mark order %s refunded: %w", orderID, err)
	}
	err = q.OrderTransitionInsert(ctx, queries.OrderTransitionInsertParams{
		OrderID: orderID, FromStatus: from, ToStatus: StatusRefunded, MessageID: messageID,
	})
	if err != nil {
		return "", "", fmt.Errorf("record the refund of order %s: %w", orderID, err)
	}
	return effect.Applied, from, nil
}
