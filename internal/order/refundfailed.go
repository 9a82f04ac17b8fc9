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

// StatusRefundFailed is the status of a paid order whose refund the
// provider refused for good: the customer asked for the money back (or the
// order could not be fulfilled), the gateway said no in a way asking again
// will not change, and the money is still with the merchant. It is not
// pending (MarkPaid changes nothing) and waits for a person: refunded in the
// provider's dashboard, the order moves to refunded (MarkRefunded), through
// the provider's payment.refunded or orderpaid reconcile.
const StatusRefundFailed = "refund_failed"

// MarkRefundFailed moves the order from paid to refund_failed and records
// the transition, inside the caller's transaction: the one that records
// the gateway's refusal (internal/consumer, refundRefused).
//
// Effect protected: "the refusal was recorded", and what hangs off it: a
// redelivery or an operator's replay of the refund finds the order
// refund_failed and does not ask the gateway again; the audit counts the
// transition (refund_failed) once. Technique: a state check, as MarkPaid:
// UPDATE ... WHERE status = 'paid', so of two deliveries refused at once
// exactly one moves the order.
//
// It returns Applied when this call moved the order, AlreadyApplied when it
// was refund_failed before, NotApplicable when it is refunded (its money is
// back by another path: the refusal no longer matters) or pending (never
// charged), and ErrNotFound.
func MarkRefundFailed(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, error) {
	_, err := q.OrderMarkRefundFailed(ctx, orderID)
	if err == nil {
		err = q.OrderTransitionInsert(ctx, queries.OrderTransitionInsertParams{
			OrderID: orderID, FromStatus: StatusPaid, ToStatus: StatusRefundFailed, MessageID: messageID,
		})
		if err != nil {
			return "", fmt.Errorf("record the refused refund of order %s: %w", orderID, err)
		}
		return effect.Applied, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("mark the refund of order %s failed: %w", orderID, err)
	}
	o, err := Get(ctx, q, orderID) // a statement of its own: it sees what moved the order
	if err != nil {
		return "", err
	}
	if o.Status == StatusRefundFailed {
		return effect.AlreadyApplied, nil
	}
	return effect.NotApplicable, nil
}
