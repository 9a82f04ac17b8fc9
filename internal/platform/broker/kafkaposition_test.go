package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// The position in the effects' transaction on Kafka
// (CONSUMER_POSITION=with-effects): a member whose offset commit on the
// cluster fails after its batch's effects committed (the fault point where
// offset-commit-lost kills the worker) leaves the group and joins again.
// With the position kept beside the effects, it seeks to it and nothing of
// the batch is applied again; with the offsets on the cluster only, the
// whole batch is (the guards' work in the flow).
func TestKafkaPositionWithEffectsRepeatsNothing(t *testing.T) {
	t.Parallel()
	const group, orders = "g", 12 // twelve orders: every partition
	for _, tt := range []struct {
		mode        string
		withEffects bool
		again       int // how often each message of the failed batch is applied again
	}{
		{"offsets on the cluster", false, 1},
		{"position with the effects", true, 0},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			pool, _ := pgtest.NewDatabase(t)
			exec(t, pool, `CREATE TABLE applied (message_id text NOT NULL)`)
			bb := kafkaSetup(t, kafkaBrokers(t), "")
			bb.provision(t, group)
			faults := fault.New(nil)
			faults.Arm(broker.FaultBeforeOffsetCommit, fault.Fail, 1)
			bb.b.WithFaults(faults)
			bb.publish(t, orders)

			src, err := bb.b.BatchReader(bb.topic, group, 100)
			if tt.withEffects {
				src, err = bb.b.BatchReaderWithEffects(pool, bb.topic, group, 100)
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var failed []*message.Message // the batch whose offset commit failed
			var batch []*message.Message
			src.Loop(ctx, 0, 10*time.Millisecond, func(msgs []*message.Message) int {
				batch = msgs
				for _, m := range msgs {
					applyIn(t, pool, m)
				}
				var seen int // in the batch's transaction, where it has one
				if err := (postgres.Routed{Pool: pool}).QueryRow(msgs[0].Context(), `SELECT count(DISTINCT message_id) FROM applied`).Scan(&seen); err != nil {
					t.Fatal(err)
				}
				if seen == 2*orders {
					cancel() // every partition read past the failed batch: a repeat has shown
				}
				return len(msgs)
			}, func(error) {
				failed = batch
				bb.publish(t, orders) // read after the rejoin, on every partition
			})

			if len(failed) == 0 {
				t.Fatal("no offset commit failed")
			}
			for _, m := range failed {
				if n := count(t, pool, `SELECT count(*) FROM applied WHERE message_id = $1`, m.UUID); n != 1+tt.again {
					t.Errorf("message %s of the failed batch applied %d time(s), want %d", m.UUID, n, 1+tt.again)
				}
			}
		})
	}
}

// A member that joins starts each partition at the position kept with the
// effects, not at the group's offset on the cluster: a group whose rows say
// everything was applied gets nothing handed out.
func TestKafkaPositionWithEffectsSeeksOnAssignment(t *testing.T) {
	t.Parallel()
	const group = "g"
	pool, _ := pgtest.NewDatabase(t)
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, group)
	bb.publish(t, 6)
	// The rows of a group that applied every record (the cluster has no
	// offset of it): each partition's end.
	ends, err := kafkaAdmin(t, brokers).ListEndOffsets(t.Context(), bb.topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		exec(t, pool, `INSERT INTO kafka_positions (consumer_group, topic, partition, next_offset) VALUES ($1, $2, $3, $4)`,
			broker.KafkaGroup(bb.topic, group), bb.topic, o.Partition, o.Offset)
	})
	src, err := bb.b.BatchReaderWithEffects(pool, bb.topic, group, 100)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	var handed int
	src.Loop(ctx, 0, 10*time.Millisecond, func(msgs []*message.Message) int {
		handed += len(msgs)
		return len(msgs)
	}, func(err error) { t.Logf("read failed: %v", err) })
	if handed != 0 {
		t.Errorf("%d record(s) handed out past the kept positions, want 0", handed)
	}
}

// applyIn records m as applied, in the enclosing transaction of its context
// when it has one (the position's), else on its own.
func applyIn(t *testing.T, pool *pgxpool.Pool, m *message.Message) {
	t.Helper()
	db := postgres.Routed{Pool: pool}
	if _, err := db.Exec(m.Context(), `INSERT INTO applied (message_id) VALUES ($1)`, m.UUID); err != nil {
		t.Errorf("apply %s: %v", m.UUID, err)
	}
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
