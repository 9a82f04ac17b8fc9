package consumer_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/stock"
)

// newStockOrder sets sku's stock to available and creates an order of qty
// units of it.
func newStockOrder(t *testing.T, b *bundle, sku string, available int64, qty int32) queries.Order {
	t.Helper()
	ctx := context.Background()
	if _, err := stock.Set(ctx, b.q, sku, available); err != nil {
		t.Fatal(err)
	}
	var o queries.Order
	err := postgres.InTx(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		o, err = order.Create(ctx, queries.New(tx), order.NewOrder{
			CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL",
			Items: []order.Item{{SKU: sku, Quantity: qty}},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func available(t *testing.T, b *bundle, sku string) int64 {
	t.Helper()
	l, err := stock.Get(context.Background(), b.q, sku)
	if err != nil {
		t.Fatal(err)
	}
	return l.Available
}

// order_paid delivered three times (two provider events, one redelivery):
// the items leave the stock once. With the reservation switched off, the
// naive counter takes them on every delivery.
func TestOrderPaidReservesStockOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		off           *switches.Set
		wantAvailable int64
		wantReserved  int64
	}{
		{"guarded", nil, 8, 1},
		{"without stock-reservation", switches.Without(effect.GuardStockReservation), 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.off)
			o := newStockOrder(t, b, "sku-1", 10, 2)
			for _, event := range []string{"evt_1", "evt_1", "evt_2"} {
				if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, event)); err != nil {
					t.Fatal(err)
				}
			}
			a := b.audit(t, o.ID)
			if got := available(t, b, "sku-1"); got != tc.wantAvailable || a.StockReserved != tc.wantReserved {
				t.Fatalf("available %d, audit stock_reserved %d; want %d and %d", got, a.StockReserved, tc.wantAvailable, tc.wantReserved)
			}
			if a.Paid != 1 {
				t.Fatalf("paid = %d, want 1", a.Paid)
			}
		})
	}
}

// The provider does not promise order: the refund of an order can arrive
// before its payment. The order is refunded (terminal); the late order_paid
// finds it and applies nothing: no transition, no stock taken, no
// confirmation, no commission.
func TestOrderPaidAfterTheRefundAppliesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := newStockOrder(t, b, "sku-1", 10, 2)
	if out, _, err := order.MarkRefunded(context.Background(), b.q, o.ID, "evt_refund"); err != nil || out != "applied" {
		t.Fatalf("refund: %s, %v", out, err)
	}
	if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_late")); err != nil {
		t.Fatal(err)
	}
	a := b.audit(t, o.ID)
	if a.Paid != 0 || a.StockReserved != 0 || a.ConfirmationEnqueued != 0 || a.Commission != 0 || available(t, b, "sku-1") != 10 {
		t.Fatalf("audit %+v, available %d: a late payment of a refunded order must apply nothing", a, available(t, b, "sku-1"))
	}
}
