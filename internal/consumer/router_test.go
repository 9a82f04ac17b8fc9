package consumer_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/poison"
)

// startRouter runs the consumers behind the real failure policy, on the
// postgres broker, until the test ends.
func (b *bundle) startRouter(t *testing.T) *broker.Broker {
	t.Helper()
	logger := watermill.NewSlogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	brk, err := broker.New(context.Background(), config.Config{Broker: config.BrokerPostgres}, b.pool, logger)
	if err != nil {
		t.Fatal(err)
	}
	r, err := consumer.NewRouter(brk, b.c, poison.NewStore(queries.New(b.pool)), logger, consumer.RouterConfig{
		MaxRetries: 3, RetryInitialInterval: 10 * time.Millisecond, CloseTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("router: %v", err)
		}
		_ = brk.Close()
	})
	<-r.Running()
	return brk
}

func (b *bundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A message that can never succeed goes to the poison queue once, with its
// reason, and is not delivered again.
func TestPoisonMessageIsParkedWithItsReason(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	brk := b.startRouter(t)
	unknown := b.newOrder(t)
	unknown.ID[0] ^= 0xff
	msgs := []*message.Message{
		message.NewMessage("11111111-1111-1111-1111-111111111111", []byte(`{"order_id": 42}`)),
		orderPaid(t, unknown, "evt_x"),
	}
	if err := brk.Publisher.Publish(messages.TopicOrderPaid, msgs...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two poisoned messages", func() bool { return b.count(t, "SELECT count(*) FROM poison_messages") == 2 })
	time.Sleep(500 * time.Millisecond) // time for any redelivery to show up
	if n := b.count(t, "SELECT count(*) FROM executions"); n != 2 {
		t.Errorf("executions = %d, want 2: a permanent failure must not be retried or redelivered", n)
	}
	if n := b.count(t, "SELECT count(*) FROM poison_messages WHERE reason LIKE '%malformed%' AND handler = 'order_paid' AND topic = 'order_paid'"); n != 1 {
		t.Errorf("malformed message parked %d times with its reason, want 1", n)
	}
	if n := b.count(t, "SELECT count(*) FROM poison_messages WHERE reason LIKE '%order not found%'"); n != 1 {
		t.Errorf("unknown-order message parked %d times with its reason, want 1", n)
	}
}

// A transient failure is retried in-process with backoff and then succeeds:
// three executions, one of each effect.
func TestTransientFailureIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	brk := b.startRouter(t)
	o := b.newOrder(t)
	b.faults.Arm(consumer.FaultAfterMarkPaid, fault.Fail, 2)
	if err := brk.Publisher.Publish(messages.TopicOrderPaid, orderPaid(t, o, "evt_1")); err != nil {
		t.Fatal(err)
	}
	// The execution log row is written after the commission: wait for both.
	waitFor(t, "the commission and the third execution", func() bool {
		a := b.audit(t, o.ID)
		return a.Commission == 1 && a.ExecutionsOrderPaid == 3
	})
	a := b.audit(t, o.ID)
	if a.ExecutionsOrderPaid != 3 || a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 {
		t.Errorf("executions=%d paid=%d commission=%d confirmation_enqueued=%d, want 3, 1, 1, 1",
			a.ExecutionsOrderPaid, a.Paid, a.Commission, a.ConfirmationEnqueued)
	}
	if n := b.count(t, "SELECT count(*) FROM poison_messages"); n != 0 {
		t.Errorf("a transient failure was poisoned (%d rows)", n)
	}
}
