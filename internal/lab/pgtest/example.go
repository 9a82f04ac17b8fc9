package pgtest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Open creates a fresh, migrated database, as NewDatabase does, for code that
// has no testing.TB: the runnable Example functions of the guards. The
// returned drop closes the pool and drops the database; call it when done.
func Open(ctx context.Context) (pool *pgxpool.Pool, drop func(), err error) {
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", AdminURL(), err)
	}
	defer admin.Close(ctx)
	tpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		return nil, nil, fmt.Errorf("prepare template database: %w", err)
	}
	name := "orderpaid_example_" + tempdb.RandomHex(6)
	url, err := tempdb.CreateFrom(ctx, AdminURL(), name, tpl)
	if err != nil {
		return nil, nil, fmt.Errorf("create example database: %w", err)
	}
	pool, err = postgres.Connect(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	drop = func() {
		pool.Close()
		_ = tempdb.Drop(AdminURL(), name)
	}
	return pool, drop, nil
}

// OpenWithOrder is Open with one order created in the fresh database, for
// the Examples whose story starts at an order: the order is n (a customer,
// an amount and a currency are filled in when n leaves them empty).
func OpenWithOrder(ctx context.Context, n order.NewOrder) (pool *pgxpool.Pool, o queries.Order, drop func(), err error) {
	pool, drop, err = Open(ctx)
	if err != nil {
		return nil, queries.Order{}, nil, err
	}
	n.CustomerID = cmp.Or(n.CustomerID, "c1")
	n.AmountCents = cmp.Or(n.AmountCents, 10000)
	n.Currency = cmp.Or(n.Currency, "BRL")
	if o, err = order.Create(ctx, queries.New(pool), n); err != nil {
		drop()
		return nil, queries.Order{}, nil, err
	}
	return pool, o, drop, nil
}

// MainExamples is the TestMain of a package whose examples need PostgreSQL.
// An Example cannot skip itself, so when the server is unreachable outside CI
// the package's tests are skipped as a whole, with a message, the way
// NewDatabase skips a test; in CI (CI set) they run and fail loudly.
//
//	func TestMain(m *testing.M) { pgtest.MainExamples(m) }
func MainExamples(m *testing.M) {
	c, err := pgx.Connect(context.Background(), AdminURL())
	if err != nil {
		if os.Getenv("CI") == "" {
			fmt.Printf("skipping: PostgreSQL not reachable at %s: %v\n", AdminURL(), err)
			os.Exit(0)
		}
	} else {
		c.Close(context.Background())
	}
	os.Exit(m.Run())
}
