package bench_test

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// The bench and the soak judge a run by what the audit counts: for orders in
// several states their totals are the sum of AuditOrder, the query of GET
// /orders/{id}/audit, over the orders, effect by effect. The fixture holds
// what made the bench's own count drift before: an operator's replay of a
// confirmation (which the audit does not count), a provider call answered
// from the provider's store (one notification, two log rows) and gateway
// calls (the audit counts charges).
func TestBenchTotalsAreTheSumOfTheAudit(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx := t.Context()
	pending, paid, replayed, twice := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	orders := []bench.Order{{ID: pending, AmountCents: 1000}, {ID: paid, AmountCents: 2000}, {ID: replayed, AmountCents: 3000}, {ID: twice, AmountCents: 4000}}
	for _, o := range orders {
		status, paidAt := "paid", "now()"
		if o.ID == pending {
			status, paidAt = "pending", "NULL"
		}
		mustExec(t, pool, `INSERT INTO orders (id, customer_id, affiliate_id, amount_cents, currency, status, paid_at)
			VALUES ($1, 'c1', 'a1', $2, 'BRL', $3, `+paidAt+`)`, o.ID, o.AmountCents, status)
	}
	for _, id := range []uuid.UUID{paid, replayed, twice, twice} { // twice: the state check was off
		mustExec(t, pool, `INSERT INTO order_transitions (order_id, from_status, to_status, message_id)
			VALUES ($1, 'pending', 'paid', gen_random_uuid()::text)`, id)
		mustExec(t, pool, `INSERT INTO executions (handler, message_id, order_id) VALUES
			('order_paid', gen_random_uuid()::text, $1), ('order_confirmed', gen_random_uuid()::text, $1)`, id)
		mustExec(t, pool, `INSERT INTO consumer_inbox (consumer, message_id, order_id)
			VALUES ('order_confirmed', gen_random_uuid()::text, $1)`, id)
		mustExec(t, pool, `INSERT INTO notification_log (order_id, message_id, idempotency_key, provider_notification_id, replayed)
			VALUES ($1::uuid, 'm', 'k', 'ntf_'||$1::text, false), ($1::uuid, 'm', 'k', 'ntf_'||$1::text, true)`, id)
	}
	for _, id := range []uuid.UUID{paid, replayed, twice} {
		mustExec(t, pool, `INSERT INTO ledger_entries (entry_key, order_id, entry_type, affiliate_id, amount_cents, message_id)
			VALUES ($1::text, $1::uuid, 'affiliate_commission', 'a1', 100, 'm')`, id)
		mustExec(t, pool, `INSERT INTO gateway_charge_calls (order_id, gateway_key, status, charge_id, replayed) VALUES
			($1::uuid, 'g', 201, 'ch_'||$1::text, false), ($1::uuid, 'g', 201, 'ch_'||$1::text, true), ($1::uuid, 'g', 503, NULL, false)`, id)
	}
	var confirmations []*message.Message
	for _, id := range []uuid.UUID{paid, replayed, replayed, twice, twice} {
		m, err := messages.NewOrderConfirmed(id)
		if err != nil {
			t.Fatal(err)
		}
		confirmations = append(confirmations, m)
	}
	confirmations[2].Metadata.Set(messages.MetadataReplayedBy, "operator") // orderpaid reprocess
	if err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		return outbox.Publish(ctx, tx, messages.TopicOrderConfirmed, confirmations...)
	}); err != nil {
		t.Fatal(err)
	}

	rows, err := bench.AuditOrders(ctx, pool, orders)
	if err != nil {
		t.Fatal(err)
	}
	got := bench.Sum(orders, rows, nil)
	var want bench.Effects
	q := queries.New(pool)
	for _, o := range orders {
		a, err := q.AuditOrder(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		want.ExecutionsOrderPaid += a.ExecutionsOrderPaid
		want.ExecutionsOrderConfirmed += a.ExecutionsOrderConfirmed
		want.Paid += a.Paid
		want.Commission += a.Commission
		want.ConfirmationEnqueued += a.ConfirmationEnqueued
		want.ConfirmationDelivered += a.ConfirmationDelivered
		want.NotificationSent += a.NotificationSent
		if o.ID == replayed && a.ConfirmationEnqueued != 1 {
			t.Fatalf("fixture: the audit counts %d confirmations of the replayed order, want 1 (the replay is not counted)", a.ConfirmationEnqueued)
		}
	}
	for _, c := range []struct {
		effect    string
		got, want int64
	}{
		{"executions order_paid", got.ExecutionsOrderPaid, want.ExecutionsOrderPaid},
		{"executions order_confirmed", got.ExecutionsOrderConfirmed, want.ExecutionsOrderConfirmed},
		{"paid", got.Paid, want.Paid},
		{"commission", got.Commission, want.Commission},
		{"confirmation_enqueued", got.ConfirmationEnqueued, want.ConfirmationEnqueued},
		{"confirmation_delivered", got.ConfirmationDelivered, want.ConfirmationDelivered},
		{"notification_sent", got.NotificationSent, want.NotificationSent},
		{"commission cents", got.CommissionCents, 300},
	} {
		if c.got != c.want {
			t.Errorf("%s: the bench counts %d, the audit %d", c.effect, c.got, c.want)
		}
	}
	for _, r := range rows {
		a, err := q.AuditOrder(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Charges != a.Charges || r.Status == "" {
			t.Errorf("order %s: the bench reads %d charges (status %q), the audit %d", r.ID, r.Charges, r.Status, a.Charges)
		}
	}
}

func mustExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
