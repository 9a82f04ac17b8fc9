package reconcile

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Most settlements hand a message to the worker through the outbox: an
// accepted charge enqueues order_paid, an accepted refund order_refunded, a
// resent confirmation order_confirmed. Such a settlement is done only once
// the worker has applied it; until then the run is waiting, not done, and
// orderpaid reconcile says so with its own exit status, so that a cron job
// can tell the two apart. A run that keeps waiting means the worker is not
// applying what it was handed: look at the worker and the poison queue.

// applied reports whether the worker has applied what settling f handed it,
// as o says. A released attempt hands it nothing.
func applied(f Finding, o queries.ReconcileHandedOffRow) bool {
	switch f.Kind {
	case ChargeNotApplied:
		return o.Status != order.StatusPending
	case RefundNotApplied:
		return o.Status == order.StatusRefunded
	case NotificationMissing:
		return o.Notified || o.ConfirmationDelivered
	}
	return true
}

// markWaiting sets Waiting on every settled finding of rep the worker has not
// applied yet, whether this run settled it or an earlier one did.
func (r *Reconciler) markWaiting(ctx context.Context, rep *Report) error {
	var ids []uuid.UUID
	for _, f := range rep.Findings {
		if f.Settled {
			ids = append(ids, f.OrderID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := queries.New(r.pool).ReconcileHandedOff(ctx, ids)
	if err != nil {
		return fmt.Errorf("read what the worker applied of the settled orders: %w", err)
	}
	byID := make(map[uuid.UUID]queries.ReconcileHandedOffRow, len(rows))
	for _, o := range rows {
		byID[o.ID] = o
	}
	for i, f := range rep.Findings {
		o, ok := byID[f.OrderID]
		rep.Findings[i].Waiting = f.Settled && ok && !applied(f, o)
	}
	return nil
}
