package stock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/stock"
)

// Reserve and Release lock an order's SKUs in SKU order, the one order
// every transaction that touches stock takes them in: two transactions over
// overlapping SKUs then queue behind each other instead of each holding one
// SKU the other needs (a deadlock, which PostgreSQL breaks by failing one of
// them). The test watches the order directly: with the last SKU held by
// another transaction, the call under test must be waiting for it while
// already holding every SKU before it. Locking in reverse (or in the order
// the client listed the items) waits on the last SKU holding nothing, and
// a transaction going the usual way round would deadlock with it.
func TestReserveAndReleaseLockSKUsInSKUOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   reserveFunc
	}{
		{"reserve", stock.Reserve},
		{"release", stock.Release},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := world(t, map[string]int64{"sku-a": 5, "sku-b": 5, "sku-c": 5})
			id := newOrder(t, pool, // listed out of SKU order, as a client may send them
				order.Item{SKU: "sku-c", Quantity: 1}, order.Item{SKU: "sku-a", Quantity: 1}, order.Item{SKU: "sku-b", Quantity: 1})
			ctx := context.Background()
			if tc.name == "release" {
				if _, err := reserve(t, pool, stock.Reserve, id, "paid"); err != nil {
					t.Fatal(err)
				}
				// Rewrite sku-a's reservation so that it comes last in the
				// table, and read the table in its own order (no index
				// scan, a plan PostgreSQL is free to choose): Release must
				// sort the rows it gets back, whatever order they come in.
				if _, err := pool.Exec(ctx, `UPDATE stock_reservations SET quantity = quantity WHERE order_id = $1 AND sku = 'sku-a'`, id); err != nil {
					t.Fatal(err)
				}
				pool = withoutIndexScans(t, pool)
			}

			freeWhileWaiting := whileWaitingFor(t, pool, "sku-c", func() error {
				_, err := reserve(t, pool, tc.fn, id, "delivery")
				return err
			}, "sku-a", "sku-b")
			for _, sku := range freeWhileWaiting {
				t.Errorf("%s: waits for sku-c while %s is free: SKUs are not locked in SKU order", tc.name, sku)
			}
		})
	}
}

// lockedElsewhere reports whether another transaction holds sku's row
// lock: a lock attempt with NOWAIT fails at once with lock_not_available
// instead of waiting.
func lockedElsewhere(t *testing.T, pool *pgxpool.Pool, sku string) bool {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT 1 FROM stock WHERE sku = $1 FOR NO KEY UPDATE NOWAIT`, sku)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
		return true
	}
	if err != nil {
		t.Fatalf("try the lock of %s: %v", sku, err)
	}
	return false
}

// withoutIndexScans returns a pool on pool's database whose plans read
// tables sequentially, in their physical order, rather than in an index's
// order (a bitmap scan too follows the index to a row's first version).
func withoutIndexScans(t *testing.T, pool *pgxpool.Pool) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	cfg.ConnConfig.RuntimeParams["enable_indexscan"] = "off"
	cfg.ConnConfig.RuntimeParams["enable_indexonlyscan"] = "off"
	cfg.ConnConfig.RuntimeParams["enable_bitmapscan"] = "off"
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// "SKU order" is the database's: Reserve reads an order's items ORDER BY
// sku, and the batch locks take SKUs the same way, so that order follows
// the column's collation, which is the locale the database was created
// with (en_US in the official PostgreSQL image), not byte order. Under
// en_US "a" sorts before "B"; in bytes "B" comes first. Release must take
// the database's order too: sorting in Go by bytes, it would lock "B" then
// "a" while a reservation of another order locks "a" then "B", and the two
// deadlock.
func TestReleaseLocksSKUsInTheDatabasesCollationOrder(t *testing.T) {
	t.Parallel()
	pool := world(t, nil)
	ctx := context.Background()
	for _, table := range []string{"stock", "order_items", "stock_reservations"} {
		if _, err := pool.Exec(ctx, `ALTER TABLE `+table+` ALTER COLUMN sku TYPE text COLLATE "en-US-x-icu"`); err != nil {
			t.Fatalf("give %s.sku an en_US collation: %v", table, err)
		}
	}
	for _, sku := range []string{"a", "B"} {
		if _, err := stock.Set(ctx, queries.New(pool), sku, 5); err != nil {
			t.Fatal(err)
		}
	}
	id := newOrder(t, pool, order.Item{SKU: "a", Quantity: 1}, order.Item{SKU: "B", Quantity: 1})
	if _, err := reserve(t, pool, stock.Reserve, id, "paid"); err != nil {
		t.Fatal(err)
	}

	freeWhileWaiting := whileWaitingFor(t, pool, "B", func() error {
		_, err := reserve(t, pool, stock.Release, id, "refund")
		return err
	}, "a")
	if len(freeWhileWaiting) != 0 {
		t.Errorf("release waits for B while a is free: it does not lock SKUs in the database's order (a before B)")
	}
}

// whileWaitingFor runs call while another transaction holds held's row
// lock, waits until call is stuck behind it, and returns which of before
// call has not locked by then; then it lets call finish and fails the test
// if call failed.
func whileWaitingFor(t *testing.T, pool *pgxpool.Pool, held string, call func() error, before ...string) (free []string) {
	t.Helper()
	ctx := context.Background()
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT 1 FROM stock WHERE sku = $1 FOR NO KEY UPDATE`, held); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	pgtest.WaitLockWaiters(t, pool, 1) // stopped at held
	for _, sku := range before {
		if !lockedElsewhere(t, pool, sku) {
			free = append(free, sku)
		}
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the call waiting for %s: %v", held, err)
	}
	return free
}
