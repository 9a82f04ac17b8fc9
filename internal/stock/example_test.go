package stock_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/stock"
)

func TestMain(m *testing.M) { pgtest.MainExamples(m) }

// The order_paid of an order with two units is handled twice (a broker
// redelivery). The reservation row, under its key (order, SKU), lets the
// first delivery take the units and answers the second with
// already_applied: the counter moves once.
func ExampleReserve() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queries.New(pool)
	if _, err := stock.Set(ctx, q, "sku-mug", 10); err != nil { // an order's items must be in stock to be ordered
		fmt.Println(err)
		return
	}
	o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AmountCents: 5000, Currency: "BRL",
		Items: []order.Item{{SKU: "sku-mug", Quantity: 2}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, delivery := range []string{"first delivery", "redelivery"} {
		err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
			outcome, err := stock.Reserve(ctx, tx, o.ID, "msg-1")
			fmt.Printf("%s: %s\n", delivery, outcome)
			return err
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	level, err := stock.Get(ctx, q, "sku-mug")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("available:", level.Available)
	// Output:
	// first delivery: applied
	// redelivery: already_applied
	// available: 8
}
