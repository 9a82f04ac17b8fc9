package inbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/orderpaid/orderpaid/internal/inbox"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestMain(m *testing.M) { pgtest.MainExamples(m) }

// One order_confirmed message is delivered twice (the worker died before
// its ack). The first delivery finds no inbox row, does the work (here, a
// line printed in the place of the e-mail) and records the message; the
// redelivery finds the row and does nothing.
func ExampleSeen() {
	ctx := context.Background()
	pool, o, drop, err := pgtest.OpenWithOrder(ctx, order.NewOrder{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queries.New(pool)

	for _, delivery := range []string{"first delivery", "redelivery"} {
		seen, err := inbox.Seen(ctx, q, "order_confirmed", "msg-1")
		if err != nil {
			fmt.Println(err)
			return
		}
		if seen {
			fmt.Printf("%s: seen before, nothing sent\n", delivery)
			continue
		}
		fmt.Printf("%s: e-mail sent\n", delivery)
		outcome, err := inbox.Record(ctx, q, "order_confirmed", "msg-1", o.ID)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: inbox row %s\n", delivery, outcome)
	}
	// Output:
	// first delivery: e-mail sent
	// first delivery: inbox row applied
	// redelivery: seen before, nothing sent
}
