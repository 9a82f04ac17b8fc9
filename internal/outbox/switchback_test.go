package outbox_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/outbox"
)

// switchToPoll is the start of a worker with OUTBOX_RELAY=poll after the
// logical relay (startWorker): SwitchBack, then TidySlots. It returns what
// they logged.
func switchToPoll(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&log, nil))
	outbox.SwitchBack(t.Context(), pool, logger)
	outbox.TidySlots(t.Context(), pool, false, logger)
	return log.String()
}

// waitConfirmed waits until the slot has confirmed everything written so
// far: the logical relay told it, after the broker took the rows.
func waitConfirmed(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var written string
	if err := pool.QueryRow(t.Context(), `SELECT pg_current_wal_lsn()::text`).Scan(&written); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var done bool
		err := pool.QueryRow(t.Context(), `SELECT confirmed_flush_lsn >= $2::pg_lsn FROM pg_replication_slots WHERE slot_name = $1`,
			outboxSlot(t, pool), written).Scan(&done)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot has not confirmed %s within 20s", written)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runsAlone skips t unless ORDERPAID_DISRUPTIVE=1: the switch-back tests
// hold the server's oldest transaction open for seconds, and while they do
// no postgres-broker consumer anywhere on the server sees a new message
// (watermill's SQL reads only below pg_snapshot_xmin): run beside the rest
// of the suite they made other packages' tests wait past their timeouts.
// scripts/test.sh runs them alone, after the suite.
func runsAlone(t *testing.T) {
	t.Helper()
	if os.Getenv("ORDERPAID_DISRUPTIVE") != "1" {
		t.Skip("holds the server's oldest transaction open, stalling every postgres-broker consumer on it: runs alone with ORDERPAID_DISRUPTIVE=1 (scripts/test.sh does)")
	}
}

// openElsewhere opens a transaction in another database of the server (the
// admin database of the tests), with a transaction id taken now, older than
// every row written after: the server's oldest open transaction. It stays
// open until the returned end is called (or the test ends).
func openElsewhere(t *testing.T) (end func()) {
	t.Helper()
	runsAlone(t)
	conn, err := pgx.Connect(t.Context(), pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	end = func() {
		once.Do(func() {
			_ = tx.Rollback(context.Background())
			_ = conn.Close(context.Background())
		})
	}
	t.Cleanup(end)
	return end
}

// Back to OUTBOX_RELAY=poll after the logical relay published everything:
// the polling relay starts where the slot stopped and publishes nothing
// again, then the rows written since. Before SwitchBack its lanes were
// still where polling had left them (here: never polled), and it published
// again every row retention kept, up to 30 days of them, past the 7 days
// the consumers' inbox remembers.
//
// A transaction of another database stays open from before the rows to
// after the switch, as on a server other applications (or other packages'
// tests) share: it cannot write this outbox, and must not hold the lanes
// back. With the server's pg_snapshot_xmin as the horizon it did, and all
// ten rows went out again (the clean-clone CI failure that reverted the
// first version of the switch, 2eb654a).
func TestSwitchBackRepublishesNothingTheSlotPublished(t *testing.T) {
	runsAlone(t)
	pool := logicalDatabase(t)
	elsewhere := openElsewhere(t)
	out := &recorder{}
	stop := startLogical(t, pool, out, nil)
	ids := writeLogical(t, pool, 10) // ten orders: both lanes
	waitPublished(t, out, ids...)
	waitConfirmed(t, pool)
	stop()

	log := switchToPoll(t, pool)
	elsewhere()
	if !strings.Contains(log, "skipped_as_published=10") {
		t.Errorf("log = %s, want the 10 rows skipped as published", log)
	}
	if slots := slotNames(t, pool); len(slots) != 0 {
		t.Errorf("slots after the switch: %v, want none: the slot held nothing", slots)
	}
	after := writeLogical(t, pool, 2)
	polled := &recorder{}
	pollAll(t, pool, polled, after...)
	if got := polled.published(); !sameIDs(got, after) {
		t.Errorf("the polling relay published %v, want only the 2 rows written after the switch %v: "+
			"%d row(s) the logical relay had published went out again", got, after, len(got)-len(after))
	}
}

// The slot published some transactions and holds others it did not, and
// transaction ids are not in commit order: a transaction that took its id
// and offset first commits last. Positions moved to the last row the slot
// published would skip it. Every row goes out at least once: the switch
// stops each lane before the first row the slot holds and below every
// transaction of this database still open. A transaction of another
// database, open throughout, holds nothing back: the rows before the early
// one are not published again.
func TestSwitchBackLosesNoRowTheSlotDidNotPublish(t *testing.T) {
	runsAlone(t)
	for _, tt := range []struct {
		name string
		// beforeSwitch: the early transaction commits before the switch
		// (the slot holds it) or after it (open at the switch).
		beforeSwitch bool
	}{
		{"a lower offset committed after the slot stopped", true},
		{"a lower offset still open at the switch", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pool := logicalDatabase(t)
			elsewhere := openElsewhere(t) // older than all: must not hold the lanes back
			out := &recorder{}
			stop := startLogical(t, pool, out, nil)
			before := writeLogical(t, pool, 4) // published, before any row held or open
			early, err := pool.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer early.Rollback(context.Background())
			earlyID := confirmationIn(t, early) // the lowest transaction id and offset
			published := writeLogical(t, pool, 6)
			waitPublished(t, out, append(before, published...)...)
			waitConfirmed(t, pool)
			stop()
			held := writeLogical(t, pool, 1) // committed, not confirmed: the slot holds it
			commit := func() {
				if err := early.Commit(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			if tt.beforeSwitch {
				commit()
			}
			log := switchToPoll(t, pool)
			elsewhere()
			if !tt.beforeSwitch {
				commit()
			}
			out = &recorder{}
			pollAll(t, pool, out)
			polled := out.published()
			for _, id := range append([]string{earlyID}, held...) {
				if !slices.Contains(polled, id) {
					t.Errorf("row %s, which the logical relay never published, was not published by the polling relay either: lost.\n"+
						"polling relay published %v\nswitch log:\n%s", id, polled, log)
				}
			}
			// And the switch did move: what lies before the first row held
			// or open was not published again.
			if slices.ContainsFunc(before, func(id string) bool { return slices.Contains(polled, id) }) {
				t.Errorf("the polling relay published %v again, rows before anything the slot held or open: the switch did not move\n%s", before, log)
			}
		})
	}
}

// sameIDs reports whether a and b hold the same ids, each as often.
func sameIDs(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
