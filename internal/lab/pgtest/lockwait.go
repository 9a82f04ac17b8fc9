package pgtest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A race test that starts goroutines and hopes they overlap catches a broken
// guard only some of the time. The helpers below make the overlap certain:
// HoldTableLock parks the first transaction at a chosen statement, with
// everything it wrote before that statement still uncommitted; WaitLockWaiters
// waits until the second transaction is stuck behind it; releasing the lock
// then lets the first commit while the second is, provably, still waiting.
// Overlap does the three in order.

// HoldTableLock locks table in EXCLUSIVE mode in a transaction of its own
// and returns the function that commits it. Until then every INSERT, UPDATE
// or DELETE on table waits (reads do not), so a transaction of the code
// under test that writes the table stops there, holding its earlier writes
// uncommitted. The lock is released at the end of the test if release was
// not called.
func HoldTableLock(t testing.TB, pool *pgxpool.Pool, table string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatalf("begin the transaction holding %s: %v", table, err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN EXCLUSIVE MODE"); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatalf("lock %s: %v", table, err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		if err := tx.Commit(ctx); err != nil {
			t.Errorf("release the lock on %s: %v", table, err)
		}
	}
	t.Cleanup(release)
	return release
}

// LockWaiter is a backend of the test's database waiting for a lock.
type LockWaiter struct {
	PID       int32
	BlockedBy []int32 // pg_blocking_pids: the backends it waits for
	Query     string
}

// WaitLockWaiters waits until at least n backends of pool's database are
// waiting for a lock (pg_stat_activity.wait_event_type = 'Lock'), and returns
// them, oldest wait first. It fails the test after 10 seconds: a transaction
// that was expected to queue behind another did not.
func WaitLockWaiters(t testing.TB, pool *pgxpool.Pool, n int) []LockWaiter {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := pool.Query(ctx, `
			SELECT pid, pg_blocking_pids(pid), query FROM pg_stat_activity
			 WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
			 ORDER BY state_change, pid`)
		if err != nil {
			t.Fatalf("read lock waiters: %v", err)
		}
		waiters, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LockWaiter, error) {
			var w LockWaiter
			return w, r.Scan(&w.PID, &w.BlockedBy, &w.Query)
		})
		if err != nil {
			t.Fatalf("read lock waiters: %v", err)
		}
		if len(waiters) >= n {
			return waiters
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s %d backend(s) wait for a lock, want %d: %+v", len(waiters), n, waiters)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitsFor reports whether w is blocked by the backend pid.
func (w LockWaiter) WaitsFor(pid int32) bool { return slices.Contains(w.BlockedBy, pid) }

// Overlap runs first and second concurrently with a certain interleaving:
// first runs until its first write to table and is held there, with what it
// wrote before still uncommitted; second starts only then and must come to
// wait for a lock first holds; then first is let go. Overlap returns when
// both have returned, and fails the test if second never waits for first:
// the guard under test let it through without looking at first's writes.
func Overlap(t testing.TB, pool *pgxpool.Pool, table string, first, second func()) {
	t.Helper()
	release := HoldTableLock(t, pool, table)
	var done sync.WaitGroup
	done.Go(first)
	firstPID := WaitLockWaiters(t, pool, 1)[0].PID
	done.Go(second)
	for _, w := range WaitLockWaiters(t, pool, 2) {
		if w.PID != firstPID && !w.WaitsFor(firstPID) {
			t.Errorf("the second transaction waits for %v, want the first (pid %d): %s", w.BlockedBy, firstPID, w.Query)
		}
	}
	release()
	done.Wait()
}
