package stock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/stock"
)

// world is a test's database with stock set for some SKUs.
func world(t *testing.T, levels map[string]int64) *pgxpool.Pool {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	for sku, n := range levels {
		if _, err := stock.Set(context.Background(), queries.New(pool), sku, n); err != nil {
			t.Fatal(err)
		}
	}
	return pool
}

// newOrder creates an order with items, in one transaction.
func newOrder(t *testing.T, pool *pgxpool.Pool, items ...order.Item) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	err := postgres.InTx(context.Background(), pool, func(tx pgx.Tx) error {
		o, err := order.Create(context.Background(), queries.New(tx), order.NewOrder{
			CustomerID: "c1", AmountCents: 1000, Currency: "BRL", Items: items,
		})
		id = o.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

type reserveFunc func(context.Context, pgx.Tx, uuid.UUID, string) (effect.Outcome, error)

// reserve runs fn in a transaction of its own, as one delivery does.
func reserve(t *testing.T, pool *pgxpool.Pool, fn reserveFunc, id uuid.UUID, msg string) (effect.Outcome, error) {
	t.Helper()
	var out effect.Outcome
	err := postgres.InTx(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		out, err = fn(context.Background(), tx, id, msg)
		return err
	})
	return out, err
}

func available(t *testing.T, pool *pgxpool.Pool, sku string) int64 {
	t.Helper()
	l, err := stock.Get(context.Background(), queries.New(pool), sku)
	if err != nil {
		t.Fatal(err)
	}
	return l.Available
}

func movements(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM stock_movements WHERE order_id = $1 AND kind = 'reserve'", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReserveOncePerOrder(t *testing.T) {
	t.Parallel()
	pool := world(t, map[string]int64{"sku-a": 10, "sku-b": 5})
	id := newOrder(t, pool, order.Item{SKU: "sku-a", Quantity: 2}, order.Item{SKU: "sku-b", Quantity: 1})
	for i, want := range []effect.Outcome{effect.Applied, effect.AlreadyApplied, effect.AlreadyApplied} {
		got, err := reserve(t, pool, stock.Reserve, id, "delivery")
		if err != nil || got != want {
			t.Fatalf("delivery %d: %s, %v; want %s", i+1, got, err, want)
		}
	}
	if a, b := available(t, pool, "sku-a"), available(t, pool, "sku-b"); a != 8 || b != 4 {
		t.Fatalf("available a=%d b=%d after 3 deliveries, want 8 and 4 (taken once)", a, b)
	}
	if l, _ := stock.Get(context.Background(), queries.New(pool), "sku-a"); l.Reserved != 2 {
		t.Fatalf("reserved = %d, want 2", l.Reserved)
	}
	if n := movements(t, pool, id); n != 1 {
		t.Fatalf("stock_reserved = %d, want 1", n)
	}
}

// The naive counter, with no reservation row to meet: each delivery takes the
// items again. This is the damage the guard exists to prevent.
func TestReserveUnguardedTakesOncePerDelivery(t *testing.T) {
	t.Parallel()
	pool := world(t, map[string]int64{"sku-a": 10})
	id := newOrder(t, pool, order.Item{SKU: "sku-a", Quantity: 2})
	for range 3 {
		if _, err := reserve(t, pool, stock.ReserveUnguarded, id, "delivery"); err != nil {
			t.Fatal(err)
		}
	}
	if a := available(t, pool, "sku-a"); a != 4 {
		t.Fatalf("available = %d after 3 naive deliveries, want 4 (taken three times)", a)
	}
	if n := movements(t, pool, id); n != 3 {
		t.Fatalf("stock_reserved = %d, want 3", n)
	}
}

func TestReserveWholeOrNothing(t *testing.T) {
	t.Parallel()
	pool := world(t, map[string]int64{"sku-a": 10, "sku-b": 2})
	id := newOrder(t, pool, order.Item{SKU: "sku-a", Quantity: 1}, order.Item{SKU: "sku-b", Quantity: 5})
	if _, err := reserve(t, pool, stock.Reserve, id, "delivery"); !errors.Is(err, stock.ErrOutOfStock) {
		t.Fatalf("err = %v, want ErrOutOfStock", err)
	}
	if a, b := available(t, pool, "sku-a"), available(t, pool, "sku-b"); a != 10 || b != 2 {
		t.Fatalf("available a=%d b=%d, want 10 and 2: a short order reserves nothing", a, b)
	}
	var rows int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM stock_reservations").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("reservation rows = %d (%v), want 0", rows, err)
	}
}

// TestLastUnitRace: two orders race for the last unit. The second decrement
// waits for the first transaction, then PostgreSQL checks its WHERE again
// against the row the first left: 0 left, so it takes nothing. A
// read-then-decrement would have read 1 and sold the unit twice.
func TestLastUnitRace(t *testing.T) {
	t.Parallel()
	pool := world(t, map[string]int64{"last": 1})
	first := newOrder(t, pool, order.Item{SKU: "last", Quantity: 1})
	second := newOrder(t, pool, order.Item{SKU: "last", Quantity: 1})
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if out, err := stock.Reserve(ctx, tx, first, "m1"); err != nil || out != effect.Applied {
		t.Fatalf("first order: %s, %v", out, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := reserve(t, pool, stock.Reserve, second, "m2")
		done <- err
	}()
	pgtest.WaitLockWaiters(t, pool, 1) // the second waits on the first's row
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, stock.ErrOutOfStock) {
		t.Fatalf("second order: err = %v, want ErrOutOfStock", err)
	}
	if a := available(t, pool, "last"); a != 0 {
		t.Fatalf("available = %d, want 0", a)
	}
}

// Items come back in SKU order whatever order the client sent them in: every
// reservation locks SKUs in that one order, so two orders with the same SKUs
// cannot each hold one and wait for the other (a deadlock).
func TestItemsInSKUOrder(t *testing.T) {
	t.Parallel()
	pool := world(t, map[string]int64{"a": 5, "b": 5, "c": 5})
	id := newOrder(t, pool, order.Item{SKU: "c", Quantity: 1}, order.Item{SKU: "a", Quantity: 1}, order.Item{SKU: "b", Quantity: 1})
	items, err := queries.New(pool).OrderItems(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Sku)
	}
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("items = %v, want [a b c]", got)
	}
}

func TestSetIsASet(t *testing.T) {
	t.Parallel()
	pool := world(t, nil)
	for range 2 {
		l, err := stock.Set(context.Background(), queries.New(pool), "sku-a", 7)
		if err != nil || l.Available != 7 {
			t.Fatalf("Set = %+v, %v; want 7 every time", l, err)
		}
	}
	if _, err := stock.Get(context.Background(), queries.New(pool), "nope"); !errors.Is(err, stock.ErrNotFound) {
		t.Fatalf("unknown SKU: %v, want ErrNotFound", err)
	}
}
