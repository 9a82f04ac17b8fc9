package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

func TestInTx(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE t (v int)"); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO t VALUES (1)")
		return err
	}

	t.Run("commits when fn succeeds", func(t *testing.T) {
		if err := postgres.InTx(ctx, pool, insert); err != nil {
			t.Fatal(err)
		}
		if got := count(); got != 1 {
			t.Fatalf("rows = %d, want 1", got)
		}
	})
	t.Run("rolls back and returns fn's error", func(t *testing.T) {
		boom := errors.New("boom")
		err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
			if err := insert(tx); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
		if got := count(); got != 1 {
			t.Fatalf("rows = %d, want 1 (rolled back)", got)
		}
	})
	t.Run("rolls back on panic and re-panics", func(t *testing.T) {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("panic was swallowed")
				}
			}()
			_ = postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
				_ = insert(tx)
				panic("boom")
			})
		}()
		if got := count(); got != 1 {
			t.Fatalf("rows = %d, want 1 (rolled back)", got)
		}
	})
	t.Run("reports a failed commit", func(t *testing.T) {
		// A deferred constraint fails at COMMIT, after fn returned nil.
		if _, err := pool.Exec(ctx, `CREATE TABLE u (v int UNIQUE DEFERRABLE INITIALLY DEFERRED)`); err != nil {
			t.Fatal(err)
		}
		err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO u VALUES (1), (1)")
			return err
		})
		if err == nil {
			t.Fatal("InTx returned nil for a commit that failed")
		}
	})
}

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	var out strings.Builder
	if err := postgres.Migrate(context.Background(), pool, &out); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if !strings.Contains(out.String(), "0 migrations applied now") {
		t.Fatalf("migrate on a migrated database applied something:\n%s", out.String())
	}
}
