package order_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestMain(m *testing.M) { pgtest.MainExamples(m) }

// The same order_paid is handled twice (a broker redelivery). The state check
// lets the first delivery move the order and answers the second with
// already_applied: one transition, however many executions.
func ExampleMarkPaid() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()

	o, err := order.Create(ctx, queries.New(pool), order.NewOrder{CustomerID: "c1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created:", o.Status)

	for _, delivery := range []string{"first delivery", "redelivery"} {
		err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
			outcome, paid, err := order.MarkPaid(ctx, queries.New(tx), o.ID, "msg-1")
			if err != nil {
				return err
			}
			fmt.Printf("%s: %s (status %s)\n", delivery, outcome, paid.Status)
			return nil
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}

	audit, err := queries.New(pool).AuditOrder(ctx, o.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("transitions recorded:", audit.Paid)
	// Output:
	// created: pending
	// first delivery: applied (status paid)
	// redelivery: already_applied (status paid)
	// transitions recorded: 1
}

// Without the state check (an unconditional UPDATE, the mistake behind
// "--without state-check") every delivery "transitions" the order again, and
// everything that hangs off the transition happens again with it.
func ExampleMarkPaidUnguarded() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()

	o, err := order.Create(ctx, queries.New(pool), order.NewOrder{CustomerID: "c1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, delivery := range []string{"first delivery", "redelivery"} {
		err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
			outcome, _, err := order.MarkPaidUnguarded(ctx, queries.New(tx), o.ID, "msg-1")
			fmt.Printf("%s: %s\n", delivery, outcome)
			return err
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	audit, err := queries.New(pool).AuditOrder(ctx, o.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("transitions recorded:", audit.Paid)
	// Output:
	// first delivery: applied
	// redelivery: applied
	// transitions recorded: 2
}
