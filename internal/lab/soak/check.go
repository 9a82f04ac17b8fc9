package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Check is one invariant and whether it held.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// Executions counts the handler runs of the soak.
type Executions struct {
	OrderPaid, OrderConfirmed int64
}

// waitSettled checks the invariants every two seconds until they all hold
// or timeout passes, and returns the last result. Until the flow has
// settled some orders are simply not done yet; after the timeout, what
// still fails is a violation.
func waitSettled(ctx context.Context, pool *pgxpool.Pool, fakesURL string, orders []bench.Order, m mix, timeout time.Duration) ([]Check, Executions, error) {
	deadline := time.Now().Add(timeout)
	for {
		checks, execs, err := check(ctx, pool, fakesURL, orders, m)
		if err == nil && allOK(checks) {
			return checks, execs, nil
		}
		if time.Now().After(deadline) {
			return checks, execs, err
		}
		select {
		case <-ctx.Done():
			return checks, execs, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func allOK(checks []Check) bool {
	for _, c := range checks {
		if !c.OK {
			return false
		}
	}
	return len(checks) > 0
}

// check reads every order's effects from the database and the provider's
// notifications, and judges the invariants. The orders of m.refunded are
// judged apart: refunded once, and each of their effects 0 or 1 (a refund
// that came before the payment leaves the payment's effects at 0).
func check(ctx context.Context, pool *pgxpool.Pool, fakesURL string, orders []bench.Order, m mix) ([]Check, Executions, error) {
	sent, err := bench.Notifications(ctx, fakesURL)
	if err != nil {
		return nil, Executions{}, err
	}
	q := queries.New(pool)
	rows, err := bench.AuditOrders(ctx, pool, orders)
	if err != nil {
		return nil, Executions{}, err
	}
	var kept []bench.Order
	var keptRows []bench.OrderEffects
	var refundedIDs []uuid.UUID
	for i, r := range rows {
		if m.refunded[r.ID] {
			refundedIDs = append(refundedIDs, r.ID)
			continue
		}
		keptRows = append(keptRows, rows[i])
	}
	for _, o := range orders {
		if !m.refunded[o.ID] {
			kept = append(kept, o)
		}
	}
	all := bench.Sum(orders, rows, sent)
	effects := bench.Sum(kept, keptRows, sent)
	perOrder := bench.NotificationsPerOrder(sent)
	var notPaid, paidTwice, commissions, enqueued, delivered, notified, reserved int
	for _, r := range keptRows {
		switch {
		case r.Status != "paid" || r.Paid == 0:
			notPaid++
		case r.Paid > 1:
			paidTwice++
		}
		count(&commissions, r.Commission != 1)
		count(&enqueued, r.ConfirmationEnqueued != 1)
		count(&delivered, r.ConfirmationDelivered != 1)
		count(&notified, perOrder[r.ID] != 1)
		want := int64(0)
		if m.stocked[r.ID] {
			want = 1
		}
		count(&reserved, r.StockReserved != want || r.StockReleased != 0)
	}
	var notRefunded, refundEffects int
	for _, r := range rows {
		if !m.refunded[r.ID] {
			continue
		}
		count(&notRefunded, r.Status != "refunded" || r.Refunded != 1)
		count(&refundEffects, r.Paid > 1 || r.Commission > 1 || r.ConfirmationEnqueued > 1 || r.StockReserved > 1 ||
			r.StockReleased != r.StockReserved || r.CommissionReversed != r.Commission || r.RefundNotified > 1)
	}
	sums, err := labqueries.New(pool).SoakLedgerSums(ctx, refundedIDs)
	if err != nil {
		return nil, Executions{}, fmt.Errorf("read the ledger of the refunded orders: %w", err)
	}
	unbalanced := 0
	for _, s := range sums {
		count(&unbalanced, s.Cents != 0)
	}
	st, err := labqueries.New(pool).SoakStock(ctx, stockSKU)
	if err != nil {
		return nil, Executions{}, fmt.Errorf("read the stock of %s: %w", stockSKU, err)
	}
	var backlog int64
	if !m.fromWAL {
		if backlog, err = q.OutboxBacklog(ctx); err != nil {
			return nil, Executions{}, fmt.Errorf("read the outbox backlog: %w", err)
		}
	}
	poison, err := q.PoisonCountPending(ctx)
	if err != nil {
		return nil, Executions{}, fmt.Errorf("read the poison queue: %w", err)
	}
	n := len(kept)
	checks := []Check{
		{"each order paid once", notPaid == 0 && paidTwice == 0, fmt.Sprintf("%d not paid, %d paid twice", notPaid, paidTwice)},
		{"one commission each", commissions == 0, fmt.Sprintf("%d orders without exactly one", commissions)},
		{"sum of commissions exact", effects.CommissionCents == effects.WantCents, fmt.Sprintf("%d cents credited, %d due", effects.CommissionCents, effects.WantCents)},
		{"one confirmation enqueued each (outbox)", enqueued == 0, fmt.Sprintf("%d orders without exactly one", enqueued)},
		{"one notification each at the provider", notified == 0, fmt.Sprintf("%d sent for %d orders not refunded; %d of them without exactly one", len(sent), n, notified)},
		{"nothing lost: every confirmation delivered (inbox)", delivered == 0, fmt.Sprintf("%d orders without exactly one", delivered)},
		{"stock: each stocked order reserved once, none released", reserved == 0, fmt.Sprintf("%d orders wrong", reserved)},
		{"stock: initial = available + held, never below 0", st.Available >= 0 && st.Available+st.Held == m.initial,
			fmt.Sprintf("%s: %d available + %d held, initial %d (%d released)", stockSKU, st.Available, st.Held, m.initial, st.Released)},
		{"each refunded order refunded once", notRefunded == 0, fmt.Sprintf("%d of %d refunded orders not refunded exactly once", notRefunded, len(refundedIDs))},
		{"refunded orders: every effect 0 or 1, stock and commission given back", refundEffects == 0, fmt.Sprintf("%d orders wrong", refundEffects)},
		{"refunded orders: ledger sums to zero", unbalanced == 0, fmt.Sprintf("%d orders whose entries do not sum to 0", unbalanced)},
		{"poison queue empty", poison == 0, fmt.Sprintf("%d pending", poison)},
	}
	// The polling relay's backlog: rows past its positions. The relay from the
	// WAL leaves those positions behind and its slot counts no rows; there,
	// "nothing lost" above is what says every message was relayed.
	if !m.fromWAL {
		checks = append(checks, Check{"outbox drained", backlog == 0, fmt.Sprintf("%d rows not relayed", backlog)})
	}
	return checks, Executions{OrderPaid: all.ExecutionsOrderPaid, OrderConfirmed: all.ExecutionsOrderConfirmed}, nil
}

func count(n *int, bad bool) {
	if bad {
		*n++
	}
}
