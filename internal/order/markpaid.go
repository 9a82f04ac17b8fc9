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
// order was already paid, NotApplicable when it was refunded (MarkRefunded:
// terminal), and ErrNotFound when there is no such order.
func MarkPaid(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, queries.Order, error) {
	o, err := q.OrderMarkPaid(ctx, orderID)
	if errors.Is(err, pgx.ErrNoRows) {
		// Nothing matched: either the order is already paid, or it does not exist.
		existing, getErr := Get(ctx, q, orderID)
		if getErr != nil {
			return "", queries.Order{}, getErr
		}
		if existing.Status == StatusRefunded {
			// Refunded is terminal: a late payment event changes nothing.
			return effect.NotApplicable, existing, nil
		}
		return effect.AlreadyApplied, existing, nil
	}
	if err != nil {
		return "", queries.Order{}, fmt.Errorf("mark order %s paid: %w", orderID, err)
	}
	if err := recordTransition(ctx, q, orderID, messageID); err != nil {
		return "", queries.Order{}, err
	}
	return effect.Applied, o, nil
}

// MarkPaidUnguarded is the mistake MarkPaid prevents, kept so the scenario
// "--without state-check" can show the damage: an unconditional UPDATE that
// "transitions" the order on every execution.
func MarkPaidUnguarded(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, queries.Order, error) {
	o, err := q.OrderMarkPaidUnconditional(ctx, orderID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", queries.Order{}, ErrNotFound
	}
	if err != nil {
		return "", queries.Order{}, fmt.Errorf("mark order %s paid: %w", orderID, err)
	}
	if err := recordTransition(ctx, q, orderID, messageID); err != nil {
		return "", queries.Order{}, err
	}
	return effect.Applied, o, nil
}

func recordTransition(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) error {
	err := q.OrderTransitionInsert(ctx, queries.OrderTransitionInsertParams{
		OrderID: orderID, FromStatus: StatusPending, ToStatus: StatusPaid, MessageID: messageID,
	})
	if err != nil {
		return fmt.Errorf("record transition of order %s: %w", orderID, err)
	}
	return nil
}
