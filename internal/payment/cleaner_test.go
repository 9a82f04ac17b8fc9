package payment_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestCleaner(t *testing.T) {
	t.Parallel()
	cfg := payment.Config{LockTimeout: time.Minute, Retention: time.Hour, CleanInterval: 10 * time.Millisecond}
	b := setup(t, cfg)
	cleaner := payment.NewCleaner(b.pool, cfg, nil)
	ctx := context.Background()
	// Subtests run one after the other: each counts every row the cleaner deletes.

	t.Run("deletes only completed keys older than the retention, and a second run finds nothing", func(t *testing.T) {
		oldDone, newDone, oldLocked := b.newOrder(t, "cust-a"), b.newOrder(t, "cust-b"), b.newOrder(t, "cust-c")
		mustCharge(t, b.svc, oldDone, "k1")
		mustCharge(t, b.svc, newDone, "k1")
		crash(t, b, cfg, oldLocked, "k1")
		b.age(t, oldDone, oldLocked)

		if n, err := cleaner.RunOnce(ctx); err != nil || n != 1 {
			t.Fatalf("first run: deleted %d, %v; want 1", n, err)
		}
		for o, want := range map[*queries.Order]int{&oldDone: 0, &newDone: 1, &oldLocked: 1} {
			if got := b.keyCount(t, o.ID); got != want {
				t.Errorf("order of %s: %d keys left, want %d", o.CustomerID, got, want)
			}
		}
		if n, err := cleaner.RunOnce(ctx); err != nil || n != 0 {
			t.Fatalf("second run: deleted %d, %v; want 0", n, err)
		}
	})

	t.Run("concurrent runs delete each key once", func(t *testing.T) {
		const keys = 6
		for range keys {
			o := b.newOrder(t, "cust-many")
			mustCharge(t, b.svc, o, "k-"+o.ID.String())
			b.age(t, o)
		}
		var total atomic.Int64
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				n, err := cleaner.RunOnce(ctx)
				if err != nil {
					t.Errorf("run: %v", err)
				}
				total.Add(n)
			})
		}
		wg.Wait()
		if total.Load() != keys {
			t.Fatalf("deleted %d in all, want %d", total.Load(), keys)
		}
	})

	t.Run("Run cleans until its context ends, then returns nil", func(t *testing.T) {
		o := b.newOrder(t, "cust-run")
		mustCharge(t, b.svc, o, "k1")
		b.age(t, o)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- cleaner.Run(runCtx) }()
		waitFor(t, func() bool { return b.keyCount(t, o.ID) == 0 })
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	})
}

// age makes the orders' keys two hours old.
func (b *bundle) age(t *testing.T, orders ...queries.Order) {
	t.Helper()
	for _, o := range orders {
		_, err := b.pool.Exec(context.Background(),
			"UPDATE idempotency_keys SET created_at = now() - interval '2 hours' WHERE order_id = $1", o.ID)
		if err != nil {
			t.Fatal(err)
		}
	}
}
