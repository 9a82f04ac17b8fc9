package ledger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestMain(m *testing.M) { pgtest.MainExamples(m) }

// Two different messages ask for the commission of one order: the webhook's
// order_paid and, a week later, a backfill's. Both carry the same business
// intent, "the commission of order X", so the UNIQUE ledger key lets the
// first insert the row and answers the second with already_applied.
func ExampleReleaseCommission() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queries.New(pool)

	o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("commission:", ledger.Commission(o.AmountCents), "cents")

	for _, messageID := range []string{"order_paid from webhook evt_1", "order_paid from backfill"} {
		outcome, err := ledger.ReleaseCommission(ctx, q, o, messageID)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s\n", messageID, outcome)
	}

	audit, err := q.AuditOrder(ctx, o.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ledger rows:", audit.Commission)
	// Output:
	// commission: 1000 cents
	// order_paid from webhook evt_1: applied
	// order_paid from backfill: already_applied
	// ledger rows: 1
}

// The classic mistake behind "--without ledger-key": a key derived from the
// delivery instead of the business intent. Two deliveries, two keys, two
// credits.
func ExampleReleaseCommissionUnguarded() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queries.New(pool)

	o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, messageID := range []string{"msg-from-evt_1", "msg-from-evt_2"} {
		outcome, err := ledger.ReleaseCommissionUnguarded(ctx, q, o, messageID)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s\n", messageID, outcome)
	}
	audit, err := q.AuditOrder(ctx, o.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ledger rows:", audit.Commission)
	// Output:
	// msg-from-evt_1: applied
	// msg-from-evt_2: applied
	// ledger rows: 2
}

// The commission and the refund of one order take the same row lock, so a
// refund asked first leaves no commission to release: CommissionDue answers
// true for a paid order, false once a refund of it was asked.
func ExampleCommissionDue() {
	ctx := context.Background()
	pool, o, drop, err := pgtest.OpenWithOrder(ctx, order.NewOrder{AffiliateID: "a1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queries.New(pool)
	if _, _, err := order.MarkPaid(ctx, q, o.ID, "msg-1"); err != nil {
		fmt.Println(err)
		return
	}
	due, err := ledger.CommissionDue(ctx, q, o.ID)
	fmt.Println("paid, no refund asked: due", due, err)

	if _, err := q.RefundRequestInsert(ctx, queries.RefundRequestInsertParams{OrderID: o.ID, Reason: "out_of_stock"}); err != nil {
		fmt.Println(err)
		return
	}
	due, err = ledger.CommissionDue(ctx, q, o.ID)
	fmt.Println("refund asked: due", due, err)
	// Output:
	// paid, no refund asked: due true <nil>
	// refund asked: due false <nil>
}
