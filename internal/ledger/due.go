package ledger

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// When the commission is due: the lock it shares with the refund.

// CommissionDue takes the order's row lock, the one a refund takes too, and
// reports whether the commission may be released: still paid, no refund
// asked. A refund first leaves nothing to credit; a commission first is there
// for the refund to reverse. The refund is read after the lock, in its own
// statement, so READ COMMITTED sees one committed while the lock was awaited.
// Call it in the transaction that releases the commission.
func CommissionDue(ctx context.Context, q *queries.Queries, orderID uuid.UUID) (bool, error) {
	status, err := q.OrderLockForCommission(ctx, orderID)
	if err != nil {
		return false, fmt.Errorf("lock order %s: %w", orderID, err)
	}
	refundRequested, err := q.RefundRequestExists(ctx, orderID)
	if err != nil {
		return false, fmt.Errorf("read the refund of order %s: %w", orderID, err)
	}
	return status == order.StatusPaid && !refundRequested, nil
}

// CommissionDueBatch is CommissionDue for a set of distinct orders, in two
// statements: their row locks in id order with each one's status
// (OrderLockForCommissionBatch), then which of them have a refund intent,
// read after the locks (RefundRequestOrdersBatch). It returns the orders
// whose commission may be released.
func CommissionDueBatch(ctx context.Context, q *queries.Queries, orderIDs []uuid.UUID) (map[uuid.UUID]bool, error) {
	rows, err := q.OrderLockForCommissionBatch(ctx, orderIDs)
	if err != nil {
		return nil, fmt.Errorf("lock %d orders: %w", len(orderIDs), err)
	}
	if len(rows) != len(orderIDs) {
		return nil, fmt.Errorf("lock %d orders: %d found", len(orderIDs), len(rows))
	}
	refunding, err := q.RefundRequestOrdersBatch(ctx, orderIDs)
	if err != nil {
		return nil, fmt.Errorf("read the refunds of %d orders: %w", len(orderIDs), err)
	}
	due := make(map[uuid.UUID]bool, len(rows))
	for _, r := range rows {
		due[r.ID] = r.Status == order.StatusPaid
	}
	for _, id := range refunding {
		due[id] = false
	}
	return due, nil
}
