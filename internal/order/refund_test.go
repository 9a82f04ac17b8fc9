package order_test

import (
	"context"
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A refund moves the order once, from paid or from pending (a refund that
// arrived before its payment), and refunded is terminal: a late payment event
// does not bring the order back.
func TestMarkRefunded(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx := context.Background()
	q := queries.New(pool)
	newOrder := func() queries.Order {
		o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AmountCents: 1000, Currency: "BRL"})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}

	paid := newOrder()
	if out, _, err := order.MarkPaid(ctx, q, paid.ID, "pay"); err != nil || out != effect.Applied {
		t.Fatalf("mark paid: %s, %v", out, err)
	}
	for i, want := range []effect.Outcome{effect.Applied, effect.AlreadyApplied, effect.AlreadyApplied} {
		out, from, err := order.MarkRefunded(ctx, q, paid.ID, "refund")
		if err != nil || out != want || (want == effect.Applied && from != order.StatusPaid) {
			t.Fatalf("refund %d: %s from %q, %v; want %s (from paid the first time)", i+1, out, from, err, want)
		}
	}

	early := newOrder() // the refund arrives before the payment
	if out, from, err := order.MarkRefunded(ctx, q, early.ID, "refund"); err != nil || out != effect.Applied || from != order.StatusPending {
		t.Fatalf("refund of a pending order: %s from %q, %v; want applied from pending", out, from, err)
	}
	out, o, err := order.MarkPaid(ctx, q, early.ID, "late-pay")
	if err != nil || out != effect.NotApplicable || o.Status != order.StatusRefunded {
		t.Fatalf("late payment: %s, status %s, %v; want not_applicable and still refunded", out, o.Status, err)
	}

	var transitions int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM order_transitions WHERE to_status = 'refunded'").Scan(&transitions); err != nil || transitions != 2 {
		t.Fatalf("refund transitions = %d (%v), want 2 (one per order)", transitions, err)
	}
}
