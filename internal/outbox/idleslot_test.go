package outbox_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// tidy runs the worker's start-up look at the slots (outbox.TidySlots) and
// returns what it logged.
func tidy(t *testing.T, pool *pgxpool.Pool, logical bool) string {
	t.Helper()
	var log strings.Builder
	outbox.TidySlots(t.Context(), pool, logical, slog.New(slog.NewTextHandler(&log, nil)))
	return log.String()
}

// slotNames lists the replication slots of pool's database.
func slotNames(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT slot_name FROM pg_replication_slots WHERE database = current_database() ORDER BY slot_name`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// outboxSlot is the logical relay's slot name of pool's database.
func outboxSlot(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var database string
	if err := pool.QueryRow(t.Context(), `SELECT current_database()`).Scan(&database); err != nil {
		t.Fatal(err)
	}
	return outbox.SlotName(database)
}

// pollAll runs the polling relay on pool to out until it published every
// id of want and every lane is past every row of the outbox (OutboxBacklog
// 0): what it would publish, it has.
func pollAll(t *testing.T, pool *pgxpool.Pool, out *recorder, want ...string) {
	t.Helper()
	relay, err := outbox.NewRelay(pool, out, watermill.NopLogger{}, outbox.RelayConfig{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	waitPublished(t, out, want...)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		backlog, err := queries.New(pool).OutboxBacklog(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if backlog == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the polling relay has %d row(s) to relay after 10s; published %v", backlog, out.published())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// After a switch back to OUTBOX_RELAY=poll nothing reads the outbox's slot,
// and the server keeps WAL for it until the disk fills. The worker drops it
// at start when that loses nothing: what it holds is still in the outbox,
// ahead of the polling relay, which publishes it.
func TestTidySlotsDropsTheOutboxSlotThePollingRelayCovers(t *testing.T) {
	t.Parallel()
	t.Run("rows written after the logical relay stopped", func(t *testing.T) {
		t.Parallel()
		pool := logicalDatabase(t)
		ids := writeLogical(t, pool, 3) // the slot holds them; the polling relay never ran
		log := tidy(t, pool, false)
		if slots := slotNames(t, pool); len(slots) != 0 {
			t.Fatalf("slots after the start of a polling worker: %v, want none\n%s", slots, log)
		}
		if !strings.Contains(log, "outbox slot dropped") || !strings.Contains(log, "held_rows=3") {
			t.Errorf("log = %s, want the drop and the 3 rows the slot held", log)
		}
		out := &recorder{}
		pollAll(t, pool, out, ids...)
		if got := out.published(); len(got) != len(ids) {
			t.Errorf("the polling relay published %v, want each of %v once", got, ids)
		}
	})
	t.Run("a drained slot, the polling relay past it", func(t *testing.T) {
		t.Parallel()
		pool := logicalDatabase(t)
		ids := writeLogical(t, pool, 2)
		// What the logical relay does once it published them: confirm
		// them, so the slot holds nothing.
		if _, err := pool.Exec(t.Context(), `SELECT count(*) FROM pg_logical_slot_get_binary_changes($1, NULL, NULL, 'proto_version', '1', 'publication_names', $2)`,
			outboxSlot(t, pool), outbox.Publication); err != nil {
			t.Fatal(err)
		}
		pollAll(t, pool, &recorder{}, ids...) // the polling relay's positions past them as well
		tidy(t, pool, false)
		if slots := slotNames(t, pool); len(slots) != 0 {
			t.Errorf("slots after the start of a polling worker: %v, want none: the slot held nothing", slots)
		}
	})
}

// The slot is the only copy of a row it holds that the polling relay will
// not publish: a row retention removed (it removes by age alone while the
// relay reads the WAL), or one the polling relay is already past (relayed
// by it, or skipped by a position moved by hand: the worker cannot tell).
// Then the slot is kept, and the worker warns, naming the slot, the WAL it
// holds and the command that drops it.
func TestTidySlotsKeepsASlotWhoseRowsThePollingRelayWouldNotPublish(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		behind func(t *testing.T, pool *pgxpool.Pool, ids []string)
	}{
		{"rows removed from the outbox", func(t *testing.T, pool *pgxpool.Pool, _ []string) {
			if _, err := pool.Exec(t.Context(), `DELETE FROM watermill_outbox`); err != nil {
				t.Fatal(err)
			}
		}},
		{"rows the polling relay is past", func(t *testing.T, pool *pgxpool.Pool, ids []string) {
			pollAll(t, pool, &recorder{}, ids...)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := logicalDatabase(t)
			slot := outboxSlot(t, pool)
			ids := writeLogical(t, pool, 2)
			tt.behind(t, pool, ids)
			log := tidy(t, pool, false)
			if slots := slotNames(t, pool); !slices.Equal(slots, []string{slot}) {
				t.Fatalf("slots after the start of a polling worker: %v, want %s kept: it holds rows the polling relay will not publish", slots, slot)
			}
			for _, want := range []string{"level=WARN", "slot=" + slot, "wal=", "pg_drop_replication_slot('" + slot + "')", "2 outbox row(s)"} {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
		})
	}
}

// Whatever the relay, a slot of the database that nobody reads is a warning
// at the worker's start; it is not the worker's to drop. With the logical
// relay, the outbox's own slot is not one: this worker is about to read it.
func TestTidySlotsWarnsOfAnotherSlotWithoutReader(t *testing.T) {
	t.Parallel()
	pool := logicalDatabase(t)
	other := "orderpaid_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := pool.Exec(t.Context(), `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, other); err != nil {
		t.Fatal(err)
	}
	ours := outboxSlot(t, pool)
	for _, logical := range []bool{true, false} {
		log := tidy(t, pool, logical)
		if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "slot="+other) || !strings.Contains(log, "pg_drop_replication_slot('"+other+"')") {
			t.Errorf("logical %v: log = %s, want a warning naming %s and the command that drops it", logical, log, other)
		}
		if logical && strings.Contains(log, ours) {
			t.Errorf("logical relay: log names the outbox slot %s, which this worker reads: %s", ours, log)
		}
		if !slices.Contains(slotNames(t, pool), other) {
			t.Fatalf("logical %v: slot %s dropped: not the worker's", logical, other)
		}
	}
}
