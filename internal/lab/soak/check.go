package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
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
func waitSettled(ctx context.Context, pool *pgxpool.Pool, fakesURL string, orders []bench.Order, timeout time.Duration) ([]Check, Executions, error) {
	deadline := time.Now().Add(timeout)
	for {
		checks, execs, err := check(ctx, pool, fakesURL, orders)
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
// notifications, and judges the invariants.
func check(ctx context.Context, pool *pgxpool.Pool, fakesURL string, orders []bench.Order) ([]Check, Executions, error) {
	sent, err := bench.Notifications(ctx, fakesURL)
	if err != nil {
		return nil, Executions{}, err
	}
	q := queries.New(pool)
	rows, err := bench.AuditOrders(ctx, pool, orders)
	if err != nil {
		return nil, Executions{}, err
	}
	effects := bench.Sum(orders, rows, sent)
	perOrder := bench.NotificationsPerOrder(sent)
	var notPaid, paidTwice, commissions, enqueued, delivered, notified int
	for _, r := range rows {
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
	}
	backlog, err := q.OutboxBacklog(ctx)
	if err != nil {
		return nil, Executions{}, fmt.Errorf("read the outbox backlog: %w", err)
	}
	poison, err := q.PoisonCountPending(ctx)
	if err != nil {
		return nil, Executions{}, fmt.Errorf("read the poison queue: %w", err)
	}
	n := len(orders)
	checks := []Check{
		{"each order paid once", notPaid == 0 && paidTwice == 0, fmt.Sprintf("%d not paid, %d paid twice", notPaid, paidTwice)},
		{"one commission each", commissions == 0, fmt.Sprintf("%d orders without exactly one", commissions)},
		{"sum of commissions exact", effects.CommissionCents == effects.WantCents, fmt.Sprintf("%d cents credited, %d due", effects.CommissionCents, effects.WantCents)},
		{"one confirmation enqueued each (outbox)", enqueued == 0, fmt.Sprintf("%d orders without exactly one", enqueued)},
		{"one notification each at the provider", notified == 0 && len(sent) == n, fmt.Sprintf("%d sent for %d orders; %d orders without exactly one", len(sent), n, notified)},
		{"nothing lost: every confirmation delivered (inbox)", delivered == 0, fmt.Sprintf("%d orders without exactly one", delivered)},
		{"poison queue empty", poison == 0, fmt.Sprintf("%d pending", poison)},
		{"outbox drained", backlog == 0, fmt.Sprintf("%d rows not relayed", backlog)},
	}
	return checks, Executions{OrderPaid: effects.ExecutionsOrderPaid, OrderConfirmed: effects.ExecutionsOrderConfirmed}, nil
}

func count(n *int, bad bool) {
	if bad {
		*n++
	}
}
