package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
)

// Two workers in batch mode start their lane readers at the same moment
// (the batch relay reads the outbox in lanes), and each reader creates the
// lane index when it starts. Two CREATE INDEX IF NOT EXISTS that run
// together both find the index missing, and the second fails on the
// catalog's unique name ("duplicate key value violates unique constraint
// pg_class_relname_nsp_index"): a worker that fails to start. The test
// makes them run together: a transaction holds the topic's table so that
// every reader waits at its CREATE INDEX, then lets go at once. Every
// reader must start, and the index exist.
func TestLaneBatchReadersStartingTogetherAllStart(t *testing.T) {
	t.Parallel()
	const topic, group, readers = "batchstart", "g", 4
	pool, b := lanesSetup(t)
	if err := b.Provision(topic, group); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	// SHARE ROW EXCLUSIVE conflicts with the SHARE lock CREATE INDEX takes,
	// and is taken before it looks for the index.
	if _, err := hold.Exec(ctx, "LOCK TABLE "+pgx.Identifier{"watermill_" + topic}.Sanitize()+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}

	errs := make(chan error, readers)
	for i := range readers { // two workers, two lanes each
		r := broker.NewLaneBatchReader(pool, topic, group, 10, lanes, i%lanes, broker.LaneKeyMessage)
		go func() {
			_, _, err := r.Read(ctx, func(msgs []*message.Message) int { return len(msgs) })
			errs <- err
		}()
	}
	// Every reader waits: at the table (all of them, when nothing orders
	// them), or one at the table and the others behind it.
	deadline := time.Now().Add(30 * time.Second)
	for waiting := 0; waiting < readers; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d readers waiting after 30s", waiting, readers)
		}
		time.Sleep(20 * time.Millisecond)
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range readers {
		if err := <-errs; err != nil {
			t.Errorf("a reader failed to start: %v", err)
		}
	}
	var indexes int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = $1 AND indexname LIKE '%lanes%'`,
		"watermill_"+topic).Scan(&indexes); err != nil || indexes != 1 {
		t.Errorf("lane indexes on the topic: %d (%v), want 1", indexes, err)
	}
}
