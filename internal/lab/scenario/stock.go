package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// A scarce resource: the order's items leave the stock once, however often
// order_paid runs.

func stockRedelivered() *Scenario {
	return &Scenario{
		Name: "stock-redelivered",
		Summary: "an order of 2 units of a SKU with 10 in stock is paid, and the provider sends a second event " +
			"for the same payment: order_paid runs twice",
		Repeated:  "order_paid x2, an order with items",
		Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 2), eq(StockReserved, 1))},
		Without: map[string]Expect{
			effect.GuardStockReservation: {
				Damage: "the items left the stock twice: the naive counter took them once per delivery (6 units left where 8 should be)",
				Checks: once(1, eq(ExecOrderPaid, 2), eq(StockReserved, 2)),
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 2 && c.ExecOrderConfirmed >= 1 },
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.Start(ctx); err != nil {
				return err
			}
			if err := s.SetStock(ctx, "sku-1", 10); err != nil {
				return err
			}
			_, charge, err := s.PaidOrder(ctx, map[string]any{"sku": "sku-1", "quantity": 2})
			if err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the first order_paid handled", 30*time.Second, func(c Counts) bool { return c.ExecOrderPaid >= 1 }); err != nil {
				return err
			}
			if err := s.Redeliver(ctx, charge, 1, false, true); err != nil {
				return err
			}
			c, err := s.WaitFor(ctx, "the second order_paid handled", 30*time.Second, func(c Counts) bool { return c.ExecOrderPaid >= 2 })
			if err != nil {
				return err
			}
			left, err := s.Stock(ctx, "sku-1")
			if err != nil {
				return err
			}
			s.Logf("sku-1: %d of 10 left after an order of 2", left)
			// The counter and the audit tell one story: 2 units per reservation.
			if want := 10 - 2*c.StockReserved; left != want {
				return fmt.Errorf("sku-1 has %d left; the audit's stock_reserved says %d (10 - 2 x reservations)", left, want)
			}
			return nil
		},
	}
}
