package broker_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// A member that joins asks the cluster for each partition from its row,
// never from below it. This kills the mutant that drops the seek on
// assignment (seekOnAssign, given to the member's client in
// kafkaBatchSource.Loop). What is handed out cannot show it: a member
// without the seek starts from the group's committed offset (here none:
// the earliest), polls a batch behind the row, finds it stale and is
// rewound to the row, so it hands out the same records, and
// TestKafkaPositionWithEffectsSeeksOnAssignment passes. Its fetches show
// it: the in-process cluster records the lowest offset each partition was
// fetched from.
func TestKafkaPositionMemberFetchesFromTheRows(t *testing.T) {
	t.Parallel()
	const group = "g"
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var mu sync.Mutex
	lowest := map[int32]int64{} // the topic's only: the cluster is the test's
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, topic := range req.(*kmsg.FetchRequest).Topics {
			for _, p := range topic.Partitions {
				if o, seen := lowest[p.Partition]; !seen || p.FetchOffset < o {
					lowest[p.Partition] = p.FetchOffset
				}
			}
		}
		return nil, nil, false // answered as usual
	})
	pool, _ := pgtest.NewDatabase(t)
	brokers := c.ListenAddrs()
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, group)
	bb.publish(t, 12) // applied, as the rows say: every partition's end
	ends, err := kafkaAdmin(t, brokers).ListEndOffsets(t.Context(), bb.topic)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		rows[o.Partition] = o.Offset
		exec(t, pool, `INSERT INTO kafka_positions (consumer_group, topic, partition, next_offset) VALUES ($1, $2, $3, $4)`,
			broker.KafkaGroup(bb.topic, group), bb.topic, o.Partition, o.Offset)
	})
	want := map[string]bool{}
	for _, m := range bb.publish(t, 12) {
		want[m.UUID] = true
	}

	src, err := bb.b.BatchReaderWithEffects(pool, bb.topic, group, 100)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got := map[string]bool{}
	src.Loop(ctx, 0, 10*time.Millisecond, func(msgs []*message.Message) int {
		for _, m := range msgs {
			got[m.UUID] = true
		}
		if len(got) >= len(want) {
			cancel()
		}
		return len(msgs)
	}, func(err error) { t.Logf("read failed: %v", err) })
	if !maps.Equal(got, want) {
		t.Errorf("handed out %d record(s), want the %d published after the rows", len(got), len(want))
	}
	mu.Lock()
	defer mu.Unlock()
	for p, row := range rows {
		if o, fetched := lowest[p]; fetched && o < row {
			t.Errorf("partition %d fetched from offset %d, below its row at %d", p, o, row)
		}
	}
}

// A member the group dropped mid-batch still holds the batch it polled,
// while the partition's new owner applied it and more and moved the row.
// When the dropped member's transaction locks the row, the row is past
// where its batch begins: the batch is stale and commits nothing, neither
// its effects nor its position. This kills the mutant that skips the
// stale-batch check in kafkaPositions.apply (movedPositions): without it
// the handler applies the first three records a second time and the row
// moves back from 6 to 3.
func TestKafkaPositionStaleBatchCommitsNothing(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	exec(t, pool, `CREATE TABLE applied (message_id text NOT NULL)`)
	topic, cl, records := kafkaRecordsOfOneOrder(t, 6)
	group := broker.KafkaGroup(topic, "g")
	apply := func(records []*kgo.Record) (handed, done int) {
		done, err := broker.KafkaPositionsApply(t.Context(), pool, group, topic, cl, records, func(msgs []*message.Message) int {
			handed += len(msgs)
			for _, m := range msgs {
				applyIn(t, pool, m)
			}
			return len(msgs)
		})
		if err != nil {
			t.Fatal(err)
		}
		return handed, done
	}
	apply(records) // the new owner: all six, the row at 6
	if handed, done := apply(records[:3]); handed != 0 || done != 0 {
		t.Errorf("the dropped member's stale batch of 3: %d handed out, %d settled, want 0 and 0", handed, done)
	}
	if n := count(t, pool, `SELECT count(*) FROM applied`); n != len(records) {
		t.Errorf("%d record(s) applied, want %d: each once", n, len(records))
	}
	next := count(t, pool, `SELECT next_offset FROM kafka_positions WHERE consumer_group = $1 AND topic = $2 AND partition = $3`, group, topic, records[0].Partition)
	if want := int(records[5].Offset + 1); next != want {
		t.Errorf("the row at %d after the stale batch, want %d, where the new owner left it", next, want)
	}
}

// Two members reading one partition at once (one the group dropped, the
// other the partition's new owner): the first locks the row, and the
// second waits at the lock until the first commits, then finds the row
// moved (TestKafkaPositionStaleBatchCommitsNothing). This kills the mutant
// that reads the rows without FOR UPDATE (KafkaPositionsLock): the second
// is then handed its batch while the first's transaction is still open,
// and both apply it. The row exists beforehand, so creating it does not
// make the second wait. Only the wait is asserted: with the lock and
// without the stale check the second waits too, and that mutant is the
// other test's.
func TestKafkaPositionSecondReaderWaitsForTheFirst(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	topic, cl, records := kafkaRecordsOfOneOrder(t, 3)
	group := broker.KafkaGroup(topic, "g")
	exec(t, pool, `INSERT INTO kafka_positions (consumer_group, topic, partition, next_offset) VALUES ($1, $2, $3, $4)`,
		group, topic, records[0].Partition, records[0].Offset)
	var secondHanded atomic.Bool
	second := make(chan error, 1)
	var overlapped, waited bool
	_, err := broker.KafkaPositionsApply(t.Context(), pool, group, topic, cl, records, func(msgs []*message.Message) int {
		go func() { // the second member, while the first holds its batch
			_, err := broker.KafkaPositionsApply(t.Context(), pool, group, topic, cl, records, func(msgs []*message.Message) int {
				secondHanded.Store(true)
				return len(msgs)
			})
			second <- err
		}()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !overlapped && !waited; time.Sleep(10 * time.Millisecond) {
			waited = count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
			overlapped = secondHanded.Load() // read after: a second handed its batch may wait later, at the move
		}
		return len(msgs)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	switch {
	case overlapped:
		t.Error("the second member was handed the batch while the first's transaction was open: the row was read without its lock")
	case !waited:
		t.Error("the second member did not wait for the first's lock within 10s")
	}
}

// kafkaRecordsOfOneOrder publishes n messages of one order (one partition)
// on a fresh topic and returns it, with the records polled back by a
// client outside any group (which the test may rewind as a member would).
func kafkaRecordsOfOneOrder(t *testing.T, n int) (topic string, cl *kgo.Client, records []*kgo.Record) {
	t.Helper()
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, "g")
	bb.publishFor(t, slices.Repeat([]string{watermill.NewUUID()}, n)...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(bb.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for len(records) < n && ctx.Err() == nil {
		records = append(records, cl.PollFetches(ctx).Records()...)
	}
	if len(records) != n {
		t.Fatalf("polled %d record(s) of %d", len(records), n)
	}
	return bb.topic, cl, records
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
