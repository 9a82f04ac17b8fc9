package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
)

// databaseWithSlot is a fresh database with the logical relay's slot
// (outbox.EnsureSlot), and the slot's name. Where the server's wal_level is
// not logical the test skips, naming the command that sets it.
func databaseWithSlot(t *testing.T) (pool *pgxpool.Pool, dbURL, slot string) {
	t.Helper()
	pgtest.RequireLogicalWAL(t)
	pool, dbURL = pgtest.NewDatabase(t)
	slot, err := outbox.EnsureSlot(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return pool, dbURL, slot
}

// A worker started with the polling relay after the relay from the WAL
// (the switch back to OUTBOX_RELAY=poll) drops the outbox's slot before its
// relay moves past what the slot holds, so nothing keeps WAL for it; and it
// warns of a slot of the database that nobody reads, naming the slot, the
// WAL it holds and the command that drops it. Before that it moved the
// relay's lanes past what the slot published (outbox.SwitchBack, here
// nothing: the slot holds the one row), and logged it.
func TestWorkerAfterASwitchToPollDropsTheOutboxSlot(t *testing.T) {
	t.Parallel()
	pool, dbURL, slot := databaseWithSlot(t)
	msg, err := messages.NewOrderConfirmed(uuid.New())
	if err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		return outbox.Publish(t.Context(), tx, messages.TopicOrderConfirmed, msg)
	}); err != nil {
		t.Fatal(err)
	}
	other := "orderpaid_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := pool.Exec(t.Context(), `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, other); err != nil {
		t.Fatal(err)
	}

	out, logs := newAddrWatcher("metrics"), newAddrWatcher()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	env := merge(brokerEnv(t, "postgres"), map[string]string{"DATABASE_URL": dbURL, "METRICS_ADDR": "127.0.0.1:0"})
	go func() { done <- run(ctx, []string{"orderpaid", "worker"}, devGetenv(env), out, logs) }()
	out.addr(t, "metrics") // started: the slots were looked at before the relay
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("worker: %v", err)
	}
	var slots []string
	rows, err := pool.Query(t.Context(), `SELECT slot_name FROM pg_replication_slots WHERE database = current_database() ORDER BY slot_name`)
	if err != nil {
		t.Fatal(err)
	}
	if slots, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if len(slots) != 1 || slots[0] != other {
		t.Errorf("slots after the worker started with OUTBOX_RELAY=poll: %v, want only %s (the outbox's %s dropped)", slots, other, slot)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	log := logs.buf.String()
	for _, want := range []string{"outbox relay switched back from the WAL", "outbox slot dropped", slot, "replication slot with no reader holds WAL", other, "pg_drop_replication_slot('" + other + "')"} {
		if !strings.Contains(log, want) {
			t.Errorf("the worker's log lacks %q:\n%s", want, log)
		}
	}
}
