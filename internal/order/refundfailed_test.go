package order_test

import (
	"context"
	"errors"
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A refund refused for good moves a paid order to refund_failed once; a
// pending or refunded order is not moved. refund_failed is not pending: a
// late payment changes nothing. A person's refund (MarkRefunded) still
// moves it to refunded, once.
func TestMarkRefundFailed(t *testing.T) {
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
	status := func(o queries.Order) string {
		got, err := order.Get(ctx, q, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}

	paid := newOrder()
	if out, _, err := order.MarkPaid(ctx, q, paid.ID, "pay"); err != nil || out != effect.Applied {
		t.Fatalf("mark paid: %s, %v", out, err)
	}
	for i, want := range []effect.Outcome{effect.Applied, effect.AlreadyApplied} {
		if out, err := order.MarkRefundFailed(ctx, q, paid.ID, "refund"); err != nil || out != want {
			t.Fatalf("refusal %d: %s, %v; want %s", i+1, out, err, want)
		}
	}
	if got := status(paid); got != order.StatusRefundFailed {
		t.Fatalf("status %s, want refund_failed", got)
	}
	if out, o, err := order.MarkPaid(ctx, q, paid.ID, "late-pay"); err != nil || out != effect.AlreadyApplied || o.Status != order.StatusRefundFailed {
		t.Errorf("late payment: %s, status %s, %v; want already_applied and still refund_failed", out, o.Status, err)
	}
	if out, from, err := order.MarkRefunded(ctx, q, paid.ID, "dashboard"); err != nil || out != effect.Applied || from != order.StatusRefundFailed {
		t.Errorf("refund from the dashboard: %s from %q, %v; want applied from refund_failed", out, from, err)
	}
	if out, err := order.MarkRefundFailed(ctx, q, paid.ID, "late-refusal"); err != nil || out != effect.NotApplicable || status(paid) != order.StatusRefunded {
		t.Errorf("refusal of a refunded order: %s, %v, status %s; want not_applicable and still refunded", out, err, status(paid))
	}

	pending := newOrder()
	if out, err := order.MarkRefundFailed(ctx, q, pending.ID, "refund"); err != nil || out != effect.NotApplicable || status(pending) != order.StatusPending {
		t.Errorf("refusal of a pending order: %s, %v, status %s; want not_applicable and still pending", out, err, status(pending))
	}
	missing := pending.ID
	missing[0] ^= 0xff
	if _, err := order.MarkRefundFailed(ctx, q, missing, "refund"); !errors.Is(err, order.ErrNotFound) {
		t.Errorf("unknown order: %v, want ErrNotFound", err)
	}

	var transitions int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM order_transitions
		WHERE order_id = $1 AND from_status = 'paid' AND to_status = 'refund_failed'`, paid.ID).Scan(&transitions); err != nil || transitions != 1 {
		t.Errorf("paid -> refund_failed transitions = %d (%v), want 1", transitions, err)
	}
}
