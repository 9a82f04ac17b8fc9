package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// kafkaPositions keeps a Kafka consumer group's position in PostgreSQL, in
// the transaction of a batch's effects (CONSUMER_POSITION=with-effects on
// BROKER=kafka), as BatchReader.WithEffects does on the postgres broker.
//
// By default a group's position is its offsets on the cluster, committed
// after the handler's effects committed in PostgreSQL: two writes, and a
// worker killed between them has its batch read again (the scenario
// offset-commit-lost). Here the position is one row per partition in
// kafka_positions (migration 00017), and a batch is one PostgreSQL
// transaction that
//
//  1. locks its partitions' rows, creating them at the batch's first
//     offsets the first time a partition is read: a member the group
//     dropped, still holding the same partitions, waits here;
//  2. checks each row is where the batch begins: a row another member moved
//     meanwhile makes the batch stale, and it is rolled back before the
//     handler sees it, its partitions sought to their rows;
//  3. runs the handler in it (postgres.WithEnclosingTx in each message's
//     context: InTx steps become savepoints, postgres.Routed statements run
//     on it);
//  4. moves the rows past what the handler settled and commits: the
//     effects and the position in one COMMIT.
//
// A member that joins seeks each partition it is given to its row
// (seekOnAssign), and to the group's committed offset where there is no row
// yet. The group's offsets on the cluster are still committed after each
// batch, for Kafka's own tools and the worker's backlog check; they may lag
// behind the rows, which are the truth.
//
// What it does not remove is what BatchReader.WithEffects does not: the
// duplicates already in the topic (two records of one message), a run the
// handler asks to repeat, and what the handler did outside the database.
type kafkaPositions struct {
	pool *pgxpool.Pool
}

// seekOnAssign is the client option that starts each partition a member is
// given at its row of group (see kafkaPositions).
func (p *kafkaPositions) seekOnAssign(group string) kgo.Opt {
	return kgo.AdjustFetchOffsetsFn(func(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
		for topic, partitions := range offsets {
			rows, err := queries.New(p.pool).KafkaPositions(ctx, queries.KafkaPositionsParams{ConsumerGroup: group, Topic: topic})
			if err != nil {
				return nil, fmt.Errorf("read the positions of %s on %s: %w", group, topic, err)
			}
			for _, r := range rows {
				if _, given := partitions[r.Partition]; given {
					partitions[r.Partition] = kgo.NewOffset().At(r.NextOffset).WithEpoch(-1)
				}
			}
		}
		return offsets, nil
	})
}

// read is kafkaBatchSource.read with the position in the effects'
// transaction: it polls a batch, applies it and moves the rows in one
// transaction, then commits the offsets on the cluster too.
func (p *kafkaPositions) read(ctx context.Context, s *kafkaBatchSource, cl *kgo.Client, poll time.Duration, handle func(msgs []*message.Message) (done int)) (read, done int, err error) {
	defer cl.AllowRebalance() // after the commit: a rebalance runs between batches
	records, err := pollBatch(ctx, cl, s.size, poll)
	if err != nil || len(records) == 0 {
		return 0, 0, err
	}
	ctx = context.WithoutCancel(ctx) // once handed out, a batch is finished and committed
	done, err = p.apply(ctx, s.group, s.topic, cl, records, handle)
	if err != nil || done == 0 {
		return len(records), done, err
	}
	if err := s.faults.Hit(FaultBeforeOffsetCommit); err != nil {
		return 0, 0, fmt.Errorf("commit the offsets of %d record(s) of %s on the cluster (their positions committed with the effects): %w", done, s.group, err)
	}
	commitCtx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	defer cancel()
	if err := cl.CommitRecords(commitCtx, records[:done]...); err != nil {
		return 0, 0, fmt.Errorf("commit the offsets of %d record(s) of %s on the cluster (their positions committed with the effects): %w", done, s.group, err)
	}
	return len(records), done, nil
}

// apply runs steps 1 to 4 of kafkaPositions for records in one
// transaction and returns how many of them settled. A stale batch settles
// none: it is rewound, and the next poll reads from the rows.
func (p *kafkaPositions) apply(ctx context.Context, group, topic string, cl *kgo.Client, records []*kgo.Record, handle func(msgs []*message.Message) (done int)) (done int, err error) {
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}) // see BatchReader.WithEffects
	if err != nil {
		rewind(cl, records)
		return 0, fmt.Errorf("read %s as %s: begin: %w", topic, group, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(ctx)
			rewind(cl, records[done:])
		}
	}()
	q := queries.New(tx)
	partitions, firsts := firstOffsets(records)
	if err := q.KafkaPositionsStart(ctx, queries.KafkaPositionsStartParams{ConsumerGroup: group, Topic: topic, Partitions: partitions, NextOffsets: firsts}); err != nil {
		return 0, fmt.Errorf("start the positions of %s on %s: %w", group, topic, err)
	}
	rows, err := q.KafkaPositionsLock(ctx, queries.KafkaPositionsLockParams{ConsumerGroup: group, Topic: topic, Partitions: partitions})
	if err != nil {
		return 0, fmt.Errorf("lock the positions of %s on %s: %w", group, topic, err)
	}
	if moved := movedPositions(topic, rows, partitions, firsts); len(moved) > 0 {
		_ = tx.Rollback(ctx)
		cl.SetOffsets(moved) // the stale partitions from their rows; the rest, again, from the batch's first offsets
		rewind(cl, dropPartitions(records, moved[topic]))
		return 0, nil
	}
	msgs := make([]*message.Message, len(records))
	for i, r := range records {
		msgs[i] = kafkaMessage(r)
		msgs[i].SetContext(postgres.WithEnclosingTx(msgs[i].Context(), tx))
	}
	done = min(max(handle(msgs), 0), len(records))
	if done > 0 {
		settled, next := nextOffsets(records[:done])
		if err := q.KafkaPositionsMove(ctx, queries.KafkaPositionsMoveParams{ConsumerGroup: group, Topic: topic, Partitions: settled, NextOffsets: next}); err != nil {
			return 0, fmt.Errorf("move the positions of %s past %d record(s): %w", group, done, err)
		}
	}
	if err := tx.Commit(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return 0, fmt.Errorf("commit %d record(s) of %s with their positions: %w", done, group, err)
	}
	if done < len(records) {
		rewind(cl, records[done:])
	}
	return done, nil
}

// firstOffsets returns the partitions of records, in order, and the offset
// of each one's first record.
func firstOffsets(records []*kgo.Record) (partitions []int32, offsets []int64) {
	first := map[int32]int64{}
	for _, r := range records {
		if _, seen := first[r.Partition]; !seen {
			first[r.Partition] = r.Offset
		}
	}
	for _, p := range slices.Sorted(maps.Keys(first)) {
		partitions, offsets = append(partitions, p), append(offsets, first[p])
	}
	return partitions, offsets
}

// nextOffsets returns the partitions of records and, for each, the offset
// after its last record: where the position moves.
func nextOffsets(records []*kgo.Record) (partitions []int32, offsets []int64) {
	next := map[int32]int64{}
	for _, r := range records {
		next[r.Partition] = r.Offset + 1
	}
	for _, p := range slices.Sorted(maps.Keys(next)) {
		partitions, offsets = append(partitions, p), append(offsets, next[p])
	}
	return partitions, offsets
}

// movedPositions returns, for topic, each partition whose row is not where
// the batch begins, with the row's offset: another member applied past it
// (or a seek went wrong), and the batch is stale there.
func movedPositions(topic string, rows []queries.KafkaPositionsLockRow, partitions []int32, firsts []int64) map[string]map[int32]kgo.EpochOffset {
	moved := map[int32]kgo.EpochOffset{}
	for _, r := range rows {
		if i := slices.Index(partitions, r.Partition); i >= 0 && r.NextOffset != firsts[i] {
			moved[r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: r.NextOffset}
		}
	}
	if len(moved) == 0 {
		return nil
	}
	return map[string]map[int32]kgo.EpochOffset{topic: moved}
}

// dropPartitions returns the records that are not on the partitions of
// moved.
func dropPartitions(records []*kgo.Record, moved map[int32]kgo.EpochOffset) []*kgo.Record {
	return slices.DeleteFunc(slices.Clone(records), func(r *kgo.Record) bool {
		_, stale := moved[r.Partition]
		return stale
	})
}
