package bench

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Effects adds up executions and effects over the orders of a run, counted
// in the database by the audit's own query (AuditOrder) and at the provider.
type Effects struct {
	Orders                                        int
	ExecutionsOrderPaid, ExecutionsOrderConfirmed int64
	Paid, Commission, ConfirmationEnqueued        int64
	ConfirmationDelivered, NotificationSent       int64
	// AtProvider is the notifications the fake provider really sent.
	AtProvider int64
	// CommissionCents is the sum of the commissions credited, WantCents the
	// sum the orders' amounts call for.
	CommissionCents, WantCents int64
	// Wrong lists orders whose effects are not exactly one each (at most 10).
	Wrong []OrderEffects
	// WrongCount is how many orders are wrong in all.
	WrongCount int
}

// OrderEffects is one order of a run: its status, amount and commission
// cents (BenchOrders), and its audit row, what GET /orders/{id}/audit counts
// for it (AuditOrder, the service's query, so that the bench and the API
// count the same way).
type OrderEffects struct {
	labqueries.BenchOrdersRow
	queries.AuditOrderRow
}

// CountEffects reads the audit of every order (AuditOrders) and the
// provider's list, and adds them up (Sum).
func CountEffects(ctx context.Context, pool *pgxpool.Pool, orders []Order, sent []fakes.Notification) (Effects, error) {
	rows, err := AuditOrders(ctx, pool, orders)
	if err != nil {
		return Effects{}, err
	}
	return Sum(orders, rows, sent), nil
}

// AuditOrders reads every order of a run, 5000 orders per query, and the
// audit row of each, one query per order.
func AuditOrders(ctx context.Context, pool *pgxpool.Pool, orders []Order) ([]OrderEffects, error) {
	out := make([]OrderEffects, 0, len(orders))
	lab, q := labqueries.New(pool), queries.New(pool)
	for start := 0; start < len(orders); start += 5000 {
		chunk := orders[start:min(start+5000, len(orders))]
		ids := make([]uuid.UUID, len(chunk))
		for i, o := range chunk {
			ids[i] = o.ID
		}
		rows, err := lab.BenchOrders(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("read the orders: %w", err)
		}
		for _, r := range rows {
			a, err := q.AuditOrder(ctx, r.ID)
			if err != nil {
				return nil, fmt.Errorf("read the audit of order %s: %w", r.ID, err)
			}
			out = append(out, OrderEffects{BenchOrdersRow: r, AuditOrderRow: a})
		}
	}
	if len(out) != len(orders) {
		return nil, fmt.Errorf("found %d of the %d orders of the run in the database", len(out), len(orders))
	}
	return out, nil
}

// Sum adds up the audit rows of the orders and the provider's list. An
// order is wrong when it is not paid, or any effect happened twice, or the
// provider did not send exactly one notification for it.
func Sum(orders []Order, rows []OrderEffects, sent []fakes.Notification) Effects {
	e := Effects{Orders: len(orders)}
	for _, o := range orders {
		e.WantCents += ledger.Commission(o.AmountCents)
	}
	perOrder := notifiedOrders(sent)
	for _, r := range rows {
		e.ExecutionsOrderPaid += r.ExecutionsOrderPaid
		e.ExecutionsOrderConfirmed += r.ExecutionsOrderConfirmed
		e.Paid += r.Paid
		e.Commission += r.Commission
		e.CommissionCents += r.CommissionCents
		e.ConfirmationEnqueued += r.ConfirmationEnqueued
		e.ConfirmationDelivered += r.ConfirmationDelivered
		e.NotificationSent += r.NotificationSent
		at := perOrder[r.ID]
		e.AtProvider += int64(at)
		if r.Status != "paid" || r.Paid != 1 || r.Commission != 1 || r.ConfirmationEnqueued > 1 || at != 1 {
			e.WrongCount++
			if len(e.Wrong) < 10 {
				e.Wrong = append(e.Wrong, r)
			}
		}
	}
	return e
}

// NotificationsPerOrder counts the provider's notifications per order.
func NotificationsPerOrder(sent []fakes.Notification) map[uuid.UUID]int { return notifiedOrders(sent) }

// SeedInboxes puts n old rows into the webhook inbox and n into the
// order_confirmed consumer inbox, each with one INSERT ... SELECT
// generate_series, in slices of a million so that no single transaction
// grows huge. seeded is told how many rows each inbox has after every slice
// but the last: seeding 5,000,000 takes minutes.
func SeedInboxes(ctx context.Context, pool *pgxpool.Pool, n int, seeded func(done int)) error {
	q := labqueries.New(pool)
	for done := 0; done < n; done += 1_000_000 {
		if done > 0 {
			seeded(done)
		}
		count := int32(min(1_000_000, n-done))
		if _, err := q.BenchSeedWebhookInbox(ctx, count); err != nil {
			return fmt.Errorf("seed the webhook inbox: %w", err)
		}
		if _, err := q.BenchSeedConsumerInbox(ctx, count); err != nil {
			return fmt.Errorf("seed the consumer inbox: %w", err)
		}
	}
	return nil
}
