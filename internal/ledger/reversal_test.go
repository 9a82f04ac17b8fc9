package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A refund reverses the commission once, however often it is delivered, and
// the order's ledger then sums to zero; both entries stay.
func TestReverseCommissionOnce(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx := context.Background()
	q := queries.New(pool)
	o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ledger.ReverseCommission(ctx, q, o.ID, "refund-0"); err != nil || out != effect.NotApplicable {
		t.Fatalf("reversal before any commission: %s, %v; want not_applicable", out, err)
	}
	if out, err := ledger.ReleaseCommission(ctx, q, o, "paid"); err != nil || out != effect.Applied {
		t.Fatalf("commission: %s, %v", out, err)
	}
	// Five deliveries of the refund, all at once.
	outcomes := make([]effect.Outcome, 5)
	var wg sync.WaitGroup
	for i := range outcomes {
		wg.Go(func() {
			// Each delivery is a message of its own: the key must come from
			// the intent, not from the delivery.
			out, err := ledger.ReverseCommission(ctx, q, o.ID, fmt.Sprintf("refund-%d", i+1))
			if err != nil {
				t.Error(err)
			}
			outcomes[i] = out
		})
	}
	wg.Wait()
	applied := 0
	for _, out := range outcomes {
		if out == effect.Applied {
			applied++
		} else if out != effect.AlreadyApplied {
			t.Fatalf("outcome %s, want applied or already_applied", out)
		}
	}
	if applied != 1 {
		t.Fatalf("%d reversals applied, want 1", applied)
	}
	var rows, sum int64
	if err := pool.QueryRow(ctx, "SELECT count(*), sum(amount_cents) FROM ledger_entries WHERE order_id = $1", o.ID).Scan(&rows, &sum); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || sum != 0 {
		t.Fatalf("ledger of the order: %d rows summing to %d, want the commission and its reversal, summing to 0", rows, sum)
	}
}
