package stock_test

import (
	"context"
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/stock"
)

func TestReleaseOnce(t *testing.T) {
	t.Parallel()
	pool := world(t, map[string]int64{"sku-a": 10, "sku-b": 5})
	id := newOrder(t, pool, order.Item{SKU: "sku-a", Quantity: 2}, order.Item{SKU: "sku-b", Quantity: 1})
	if out, err := reserve(t, pool, stock.Reserve, id, "paid"); err != nil || out != effect.Applied {
		t.Fatalf("reserve: %s, %v", out, err)
	}
	for i, want := range []effect.Outcome{effect.Applied, effect.AlreadyApplied, effect.AlreadyApplied} {
		got, err := reserve(t, pool, stock.Release, id, "refund")
		if err != nil || got != want {
			t.Fatalf("release %d: %s, %v; want %s", i+1, got, err, want)
		}
	}
	if a, b := available(t, pool, "sku-a"), available(t, pool, "sku-b"); a != 10 || b != 5 {
		t.Fatalf("available a=%d b=%d after three releases, want 10 and 5 (given back once)", a, b)
	}
	var released int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM stock_movements WHERE order_id = $1 AND kind = 'release'", id).Scan(&released); err != nil || released != 1 {
		t.Fatalf("stock_released = %d (%v), want 1", released, err)
	}
	// A reservation given back does not come back: reserving again is
	// already_applied, the counter stays.
	if out, err := reserve(t, pool, stock.Reserve, id, "late"); err != nil || out != effect.AlreadyApplied || available(t, pool, "sku-a") != 10 {
		t.Fatalf("reserve after release: %s, %v, available %d; want already_applied and 10", out, err, available(t, pool, "sku-a"))
	}
}

func TestReleaseWithoutReservation(t *testing.T) {
	t.Parallel()
	pool := world(t, map[string]int64{"sku-a": 10})
	id := newOrder(t, pool, order.Item{SKU: "sku-a", Quantity: 2})
	if out, err := reserve(t, pool, stock.Release, id, "refund"); err != nil || out != effect.NotApplicable {
		t.Fatalf("release of an order never reserved: %s, %v; want not_applicable", out, err)
	}
	if a := available(t, pool, "sku-a"); a != 10 {
		t.Fatalf("available = %d, want 10", a)
	}
}

// TestReleaseRace: two releases of one order at once (a refund webhook and
// its redelivery). The second waits for the first, then finds the rows
// released and gives nothing back: a read-then-update would give it back
// twice.
func TestReleaseRace(t *testing.T) {
	t.Parallel()
	pool := world(t, map[string]int64{"sku-a": 10})
	id := newOrder(t, pool, order.Item{SKU: "sku-a", Quantity: 2})
	if _, err := reserve(t, pool, stock.Reserve, id, "paid"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if out, err := stock.Release(ctx, tx, id, "refund-1"); err != nil || out != effect.Applied {
		t.Fatalf("first release: %s, %v", out, err)
	}
	done := make(chan effect.Outcome, 1)
	go func() {
		out, err := reserve(t, pool, stock.Release, id, "refund-2")
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	pgtest.WaitLockWaiters(t, pool, 1)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if out := <-done; out != effect.AlreadyApplied {
		t.Fatalf("second release: %s, want already_applied", out)
	}
	if a := available(t, pool, "sku-a"); a != 10 {
		t.Fatalf("available = %d, want 10 (given back once)", a)
	}
}
