package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
)

const (
	pollTopic = "poll"
	pollGroup = "g"
)

// backlog creates watermill-sql's tables for pollTopic and writes rows
// messages in transactions of perTx rows each, as publishers would, with the
// group's position at the start.
func backlog(tb testing.TB, pool *pgxpool.Pool, rows, perTx int) {
	tb.Helper()
	ctx := context.Background()
	var stmts []string
	schema, err := wsql.DefaultPostgreSQLSchema{}.SchemaInitializingQueries(wsql.SchemaInitializingQueriesParams{Topic: pollTopic})
	if err != nil {
		tb.Fatal(err)
	}
	offsets, err := wsql.DefaultPostgreSQLOffsetsAdapter{}.SchemaInitializingQueries(wsql.OffsetsSchemaInitializingQueriesParams{Topic: pollTopic})
	if err != nil {
		tb.Fatal(err)
	}
	for _, q := range append(schema, offsets...) {
		stmts = append(stmts, q.Query)
	}
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO watermill_offsets_poll (consumer_group, offset_acked, last_processed_transaction_id)
		VALUES ($1, 0, '0')`, pollGroup); err != nil {
		tb.Fatal(err)
	}
	for written := 0; written < rows; written += perTx {
		// One statement is one transaction: its rows share a transaction_id.
		if _, err := pool.Exec(ctx, `INSERT INTO watermill_poll (uuid, payload, metadata, transaction_id)
			SELECT gen_random_uuid()::text, '{}', '{}', pg_current_xact_id() FROM generate_series(1, $1)`,
			min(perTx, rows-written)); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE watermill_poll"); err != nil {
		tb.Fatal(err)
	}
	// Both polls see a row only once every transaction older than it has
	// ended, on the whole server: another test's open transaction holds
	// them back. Wait until all rows are visible, so that both polls, run
	// one after the other, see the same rows.
	deadline := time.Now().Add(time.Minute)
	for {
		var visible int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM watermill_poll
			WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())`).Scan(&visible); err != nil {
			tb.Fatal(err)
		}
		if visible == rows {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d rows visible after a minute: a transaction left open on the server holds them back", visible, rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// poll runs a schema's poll as the subscriber does, in a transaction, and
// returns the offsets it read.
func poll(tb testing.TB, pool *pgxpool.Pool, schema wsql.SchemaAdapter) []int64 {
	tb.Helper()
	q, err := schema.SelectQuery(wsql.SelectQueryParams{
		Topic: pollTopic, ConsumerGroup: pollGroup, OffsetsAdapter: wsql.DefaultPostgreSQLOffsetsAdapter{},
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	rows, err := tx.Query(ctx, q.Query, q.Args...)
	if err != nil {
		tb.Fatal(err)
	}
	offsets, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int64, error) {
		var off int64
		var txid, id string
		var payload, meta []byte
		err := r.Scan(&off, &txid, &id, &payload, &meta)
		return off, err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return offsets
}

// moveTo sets the group's position to the row at the given rank.
func moveTo(tb testing.TB, pool *pgxpool.Pool, rank int) {
	tb.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE watermill_offsets_poll o
		SET offset_acked = m."offset", last_processed_transaction_id = m.transaction_id
		FROM (SELECT "offset", transaction_id FROM watermill_poll ORDER BY transaction_id, "offset" OFFSET $1 LIMIT 1) m
		WHERE o.consumer_group = $2`, rank, pollGroup); err != nil {
		tb.Fatal(err)
	}
}

// The rewritten poll must hand out exactly the rows watermill's does, in the
// same order, wherever the group stands: at the start, inside a
// transaction's rows, on its last row, near the end.
func TestPostgresSchemaPollsWhatWatermillPolls(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	backlog(t, pool, 500, 7)
	ours := broker.PostgresSchema{BatchSize: 10}
	theirs := wsql.DefaultPostgreSQLSchema{SubscribeBatchSize: 10}
	for _, rank := range []int{-1, 0, 3, 6, 7, 250, 489, 495, 499} {
		if rank >= 0 {
			moveTo(t, pool, rank)
		}
		got, want := poll(t, pool, ours), poll(t, pool, theirs)
		if !slices.Equal(got, want) {
			t.Errorf("position at rank %d: rewritten poll read %v, watermill's %v", rank, got, want)
		}
		if rank < 490 && len(got) != 10 {
			t.Errorf("position at rank %d: read %d rows, want a full batch of 10", rank, len(got))
		}
	}
}

// BenchmarkPollWithBacklog compares one poll of 10 rows by watermill's query
// and by PostgresSchema's, with the group at the start of a backlog. The
// first reads the whole backlog on every poll, the second ten rows of an
// index:
//
//	go test -run '^$' -bench PollWithBacklog ./internal/platform/broker
func BenchmarkPollWithBacklog(b *testing.B) {
	for _, rows := range []int{1_000, 100_000} {
		pool, _ := pgtest.NewDatabase(b)
		backlog(b, pool, rows, 100)
		for _, s := range []struct {
			name   string
			schema wsql.SchemaAdapter
		}{
			{"watermill", wsql.DefaultPostgreSQLSchema{SubscribeBatchSize: 10}},
			{"row-range", broker.PostgresSchema{BatchSize: 10}},
		} {
			b.Run(fmt.Sprintf("backlog=%d/%s", rows, s.name), func(b *testing.B) {
				for b.Loop() {
					if n := len(poll(b, pool, s.schema)); n != 10 {
						b.Fatalf("read %d rows, want 10", n)
					}
				}
			})
		}
	}
}

// ourPoll is PostgresSchema's poll of pollTopic as pollGroup.
func ourPoll(tb testing.TB) wsql.Query {
	tb.Helper()
	q, err := broker.PostgresSchema{BatchSize: 10}.SelectQuery(wsql.SelectQueryParams{
		Topic: pollTopic, ConsumerGroup: pollGroup, OffsetsAdapter: wsql.DefaultPostgreSQLOffsetsAdapter{},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// countRows runs q in tx and counts the rows it returns.
func countRows(ctx context.Context, tx pgx.Tx, q wsql.Query) (int, error) {
	rows, err := tx.Query(ctx, q.Query, q.Args...)
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

// While one member of a group holds its position (it is handling the
// messages after it), another member's poll returns nothing at once instead
// of waiting for the lock with a connection open. With FOR UPDATE without
// SKIP LOCKED, the second poll waits and the statement timeout fails it.
func TestPollSkipsAPositionAnotherMemberHolds(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	backlog(t, pool, 20, 1)
	ctx, q := t.Context(), ourPoll(t)
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck // only held
	if held, err := countRows(ctx, holder, q); err != nil || held != 10 {
		t.Fatalf("first member read %d rows (err %v), want 10", held, err)
	}

	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx) //nolint:errcheck // read only
	if _, err := other.Exec(ctx, "SET LOCAL statement_timeout = '2s'"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := countRows(ctx, other, q)
	if err != nil {
		t.Fatalf("second member's poll: %v (after %v); want no rows at once", err, time.Since(start).Round(time.Millisecond))
	}
	if got != 0 {
		t.Fatalf("second member read %d rows while the first holds the position: they would be handled twice", got)
	}
}

// A poll that finds nothing waiting only reads: it locks no position, so its
// transaction gets no id and its commit waits for no WAL flush (an idle
// worker polls each lane ten times a second). One that finds rows locks the
// position, as members of a group must take turns.
func TestEmptyPollTakesNoLock(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	backlog(t, pool, 3, 1)
	ctx, q := t.Context(), ourPoll(t)
	pollTx := func() (rows int, gotID bool) {
		tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // inspected only
		if rows, err = countRows(ctx, tx, q); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, "SELECT pg_current_xact_id_if_assigned() IS NOT NULL").Scan(&gotID); err != nil {
			t.Fatal(err)
		}
		return rows, gotID
	}
	if rows, gotID := pollTx(); rows != 3 || !gotID {
		t.Fatalf("poll with 3 rows waiting: read %d, locked the position %v; want 3 and a lock", rows, gotID)
	}
	moveTo(t, pool, 2) // everything consumed
	if rows, gotID := pollTx(); rows != 0 || gotID {
		t.Fatalf("poll with nothing waiting: read %d, locked the position %v; want 0 and no lock", rows, gotID)
	}
}
