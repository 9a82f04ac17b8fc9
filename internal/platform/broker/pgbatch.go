package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// BatchReader reads one topic of the postgres broker for one consumer group
// several messages at a time, for a handler that applies a whole batch at
// once (CONSUMER_BATCH_SIZE > 1). It reads the tables watermill-sql writes,
// with the same poll (PostgresSchema) and the same position row, so the
// group's position is one, whichever reads it.
//
// A read is one transaction, as watermill-sql's: it locks the group's
// position (FOR UPDATE SKIP LOCKED: another member holding it means nothing
// to hand out), reads up to Size messages after it, hands them to the
// handler, and moves the position past the first done of them, the ones
// the handler settled (applied, or put in the poison queue). The rest are
// read again by the next read, in order. A crash before the commit leaves
// the position where it was: the whole batch comes again, and the guards
// answer already_applied for what had been applied.
//
// That is the default: the handler's effects commit in the handler's own
// transactions, and the position after them, in the read's. With
// WithEffects the position commits with the effects instead (see its doc).
type BatchReader struct {
	pool    *pgxpool.Pool
	topic   string
	group   string
	schema  PostgresSchema
	offsets wsql.DefaultPostgreSQLOffsetsAdapter
	// started: the group's position row exists (see Read).
	started bool
	// withEffects: the handler runs in the read's transaction (WithEffects).
	withEffects bool
}

// WithEffects makes the reader hand its read transaction to the handler,
// so that the effects and the position commit together, in one COMMIT:
// exactly-once processing inside one database (CONSUMER_POSITION=
// with-effects). Each message's context carries the transaction
// (postgres.WithEnclosingTx): the handler's postgres.InTx steps become
// savepoints of it, and a postgres.Routed pool runs its other statements on
// it. Then a crash anywhere in a batch leaves nothing of it, effects and
// log included, and the batch comes again as if never read; a batch that
// commits is never read again.
//
// A COMMIT whose answer was lost is no repeat either: the reader cannot
// tell whether it happened, and reads again from wherever the position is,
// which is the truth.
//
// What it does not remove: the duplicates already in the topic (a webhook
// delivered twice is two messages; the relay is at least once; an operator
// re-enqueues; a backfill runs twice), a run the handler itself asks to
// repeat (a transient failure after its effects), and whatever the handler
// did outside the database (the provider's e-mail, already sent when the
// transaction is lost): the guards stay, each on its effect.
//
// The read runs READ COMMITTED, not REPEATABLE READ as watermill-sql's
// does: the state check's UPDATE ... WHERE status = 'pending' must
// re-check a row another transaction changed meanwhile, and under
// REPEATABLE READ it would fail with a serialization error instead.
// A statement that fails outside the handler's savepoints aborts the read's
// transaction: its commit fails, and the whole batch comes again, with
// nothing of the attempt kept.
func (r *BatchReader) WithEffects() *BatchReader {
	r.withEffects = true
	return r
}

// NewLaneBatchReader returns a reader of lane lane of lanes of topic, by
// laneKey, as NewPostgresSubscriber's lane k reads it: same sub-group
// (LaneGroup), same position row, so a lane's reader and its subscriber
// take turns on one position.
func NewLaneBatchReader(pool *pgxpool.Pool, topic, group string, size, lanes, lane int, laneKey string) *BatchReader {
	r := NewBatchReader(pool, topic, LaneGroup(group, lane, lanes), size)
	r.schema.Lanes, r.schema.Lane, r.schema.LaneKey = lanes, lane, laneKey
	return r
}

// NewBatchReader returns a reader of topic for group, size messages a read.
// The tables and the group's position row must exist: Broker.Provision
// creates them.
func NewBatchReader(pool *pgxpool.Pool, topic, group string, size int) *BatchReader {
	return &BatchReader{pool: pool, topic: topic, group: group, schema: PostgresSchema{BatchSize: max(size, 1)}}
}

// Loop reads batches and hands them to handle until ctx ends, the read
// loop of every batch consumer: after an empty read it waits poll (default
// 100ms); after a failed read (reported to failed) or a batch handle did
// not settle in full, it waits backoff (default 100ms, doubling to 2s,
// back to the start after a batch settled in full), and the next read
// begins with the first unsettled message. A batch in flight when ctx ends
// is finished, its position moved: stopping never cuts one in half.
func (r *BatchReader) Loop(ctx context.Context, poll, backoff time.Duration, handle func(msgs []*message.Message) (done int), failed func(error)) {
	readLoop(ctx, cmp.Or(poll, 100*time.Millisecond), backoff,
		func() (int, int, error) { return r.Read(context.WithoutCancel(ctx), handle) }, failed, nil)
}

// start creates the group's position row and, when the reader reads in
// lanes, the lane index (PostgresSchema.SchemaInitializingQueries), which a
// lane's subscriber creates when it starts. A group starts at offset 0, as
// watermill-sql's subscriber starts it: without its row there is no
// position to lock, or to read after.
//
// Failure it prevents: a worker that fails to start. Readers of several
// workers (and the lanes of one) start together, and two CREATE INDEX IF
// NOT EXISTS run at once both find the index missing: the second fails on
// the catalog's unique name. So the queries run in one transaction that
// begins with watermill's schema lock (pg_advisory_xact_lock, the first of
// the schema's initializing queries, the one its subscribers take): one
// reader creates the index, the others find it made.
func (r *BatchReader) start(ctx context.Context) error {
	qs, err := r.offsets.BeforeSubscribingQueries(wsql.BeforeSubscribingQueriesParams{Topic: r.topic, ConsumerGroup: r.group})
	if err != nil {
		return err
	}
	if r.schema.Lanes > 1 {
		init, err := r.schema.SchemaInitializingQueries(wsql.SchemaInitializingQueriesParams{Topic: r.topic})
		if err != nil {
			return err
		}
		qs = append(init, qs...)
	}
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		for _, q := range qs {
			if _, err := tx.Exec(ctx, q.Query, q.Args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("start the position of %s on %s: %w", r.group, r.topic, err)
	}
	return nil
}

// Read reads one batch and hands it to handle, which returns how many of the
// messages, from the first, are settled. It returns how many were read (0:
// none waiting, or another member holds the position) and how many settled.
func (r *BatchReader) Read(ctx context.Context, handle func(msgs []*message.Message) (done int)) (read, done int, err error) {
	if !r.started {
		if err := r.start(ctx); err != nil {
			return 0, 0, err
		}
		r.started = true
	}
	iso := pgx.RepeatableRead // watermill-sql's
	if r.withEffects {
		iso = pgx.ReadCommitted // see WithEffects
	}
	tx, err := r.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
	if err != nil {
		return 0, 0, fmt.Errorf("read %s as %s: begin: %w", r.topic, r.group, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	q, err := r.schema.SelectQuery(wsql.SelectQueryParams{Topic: r.topic, ConsumerGroup: r.group, OffsetsAdapter: r.offsets})
	if err != nil {
		return 0, 0, err
	}
	rows, err := tx.Query(ctx, q.Query, q.Args...)
	if err != nil {
		return 0, 0, fmt.Errorf("read %s as %s: %w", r.topic, r.group, err)
	}
	var batch []wsql.Row
	for rows.Next() {
		row, err := r.schema.UnmarshalMessage(wsql.UnmarshalMessageParams{Row: rows})
		if err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("read %s as %s: %w", r.topic, r.group, err)
		}
		batch = append(batch, row)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("read %s as %s: %w", r.topic, r.group, err)
	}
	if len(batch) == 0 {
		return 0, 0, tx.Commit(ctx)
	}
	msgs := make([]*message.Message, len(batch))
	for i, row := range batch {
		msgs[i] = row.Msg
		if r.withEffects {
			msgs[i].SetContext(postgres.WithEnclosingTx(msgs[i].Context(), tx))
		}
	}
	done = min(max(handle(msgs), 0), len(batch))
	if done > 0 {
		ack, err := r.offsets.AckMessageQuery(wsql.AckMessageQueryParams{
			Topic: r.topic, LastRow: batch[done-1], Rows: batch[:done], ConsumerGroup: r.group,
		})
		if err != nil {
			return 0, 0, err
		}
		// The handler's own transactions have committed (or, WithEffects,
		// are savepoints of tx); the position commits now, on a context
		// that outlives a shutdown in between.
		if _, err := tx.Exec(context.WithoutCancel(ctx), ack.Query, ack.Args...); err != nil {
			return 0, 0, fmt.Errorf("move the position of %s past %d message(s): %w", r.group, done, err)
		}
	}
	if err := tx.Commit(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return 0, 0, fmt.Errorf("commit the position of %s: %w", r.group, err)
	}
	return len(batch), done, nil
}
