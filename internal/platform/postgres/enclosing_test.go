package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// Under an enclosing transaction, InTx is a savepoint of it and a Routed
// pool runs on it: a failed step undoes only its own writes, the writes
// of the steps that succeeded (and of Routed statements) are seen inside
// and by no one else, and the enclosing COMMIT makes them all durable, or
// its rollback none of them.
func TestInTxUnderAnEnclosingTransaction(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE t (v int)"); err != nil {
		t.Fatal(err)
	}
	outside := func() int { // what another connection sees
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	routed := postgres.Routed{Pool: pool}
	for _, commit := range []bool{true, false} {
		if _, err := pool.Exec(ctx, "TRUNCATE t"); err != nil {
			t.Fatal(err)
		}
		enclosing, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ectx := postgres.WithEnclosingTx(ctx, enclosing)
		if err := postgres.InTx(ectx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ectx, "INSERT INTO t VALUES (1)")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		if err := postgres.InTx(ectx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ectx, "INSERT INTO t VALUES (2)"); err != nil {
				return err
			}
			return boom
		}); !errors.Is(err, boom) {
			t.Fatalf("failed step: %v, want boom", err)
		}
		if _, err := routed.Exec(ectx, "INSERT INTO t VALUES (3)"); err != nil {
			t.Fatal(err)
		}
		var inside int
		if err := routed.QueryRow(ectx, "SELECT count(*) FROM t").Scan(&inside); err != nil {
			t.Fatal(err)
		}
		if inside != 2 || outside() != 0 {
			t.Fatalf("before the enclosing commit: %d rows inside, %d outside; want 2 (the failed step undone) and 0", inside, outside())
		}
		want := 0
		if commit {
			want = 2
			err = enclosing.Commit(ctx)
		} else {
			err = enclosing.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := outside(); got != want {
			t.Errorf("after the enclosing transaction ended (commit %v): %d rows, want %d", commit, got, want)
		}
	}
}
