package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
)

// subscribeTurn subscribes a postgres subscriber of pollGroup, whose turn is
// the advisory lock, to pollTopic.
func subscribeTurn(t *testing.T, pool *pgxpool.Pool) <-chan *message.Message {
	t.Helper()
	sub, err := broker.NewPostgresSubscriber(pool, broker.PostgresSubscriberConfig{ConsumerGroup: pollGroup, PollInterval: 20 * time.Millisecond}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	return subscribe(t, sub)
}

func subscribe(t *testing.T, sub message.Subscriber) <-chan *message.Message {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() { cancel(); _ = sub.Close() })
	ch, err := sub.Subscribe(ctx, pollTopic)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// heldIDs counts the transactions of this test's database that hold a
// transaction id, other than the caller's.
func heldIDs(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// While a handler works on a message, its subscriber's transaction holds no
// transaction id, so it holds back no reader of a watermill-sql table on the
// server (they read below the oldest id running). watermill's row lock on
// the position gives it one for as long as the handler runs.
func TestTurnHoldsNoTransactionIDWhileTheHandlerRuns(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		sub     func(*pgxpool.Pool) (message.Subscriber, error)
		wantIDs int
	}{
		{"advisory turn", func(pool *pgxpool.Pool) (message.Subscriber, error) {
			return broker.NewPostgresSubscriber(pool, broker.PostgresSubscriberConfig{ConsumerGroup: pollGroup, PollInterval: 20 * time.Millisecond}, watermill.NopLogger{})
		}, 0},
		{"watermill's row lock", func(pool *pgxpool.Pool) (message.Subscriber, error) {
			return broker.NewPostgresSubscriberRowLocked(pool, pollGroup)
		}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool, _ := pgtest.NewDatabase(t)
			backlog(t, pool, 3, 1)
			sub, err := tt.sub(pool)
			if err != nil {
				t.Fatal(err)
			}
			msg := receiveWithin(t, subscribe(t, sub), 10*time.Second)
			time.Sleep(200 * time.Millisecond) // the handler at work
			if got := heldIDs(t, pool); got != tt.wantIDs {
				t.Errorf("while the handler runs: %d transaction(s) with an id, want %d", got, tt.wantIDs)
			}
			msg.Ack()
		})
	}
}

// Two members of a group take turns: each message is handed out once,
// although both poll all the time, and the one that takes the turn next
// reads the position the last one committed.
func TestTurnHandsEachMessageOutOnce(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	const n = 60
	backlog(t, pool, n, 1)
	a, b := subscribeTurn(t, pool), subscribeTurn(t, pool)
	seen := map[string]int{}
	for len(seen) < n {
		var msg *message.Message
		select {
		case msg = <-a:
		case msg = <-b:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d messages handed out, then nothing for 20s", len(seen), n)
		}
		seen[msg.UUID]++
		if seen[msg.UUID] > 1 {
			t.Errorf("message %s handed out %d times", msg.UUID, seen[msg.UUID])
		}
		msg.Ack()
	}
	select { // nothing more
	case msg := <-a:
		t.Errorf("message %s handed out again", msg.UUID)
	case msg := <-b:
		t.Errorf("message %s handed out again", msg.UUID)
	case <-time.After(500 * time.Millisecond):
	}
}
