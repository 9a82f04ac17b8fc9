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
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/poison"
)

// A graceful shutdown (SIGTERM on a deploy) that arrives while a handler is
// running lets it finish with a live context and writes its ack: the next
// worker does not run that message again. Without the drain the router
// cancels the handler's context and drops the ack, and the message is
// handled twice.
func TestShutdownFinishesAndAcksTheMessageInHand(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	logger := watermill.NewSlogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	brk, err := broker.New(context.Background(), config.Config{Broker: config.BrokerPostgres}, b.pool, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = brk.Close() })

	started, release := make(chan struct{}), make(chan struct{})
	handled := make(chan error, 1)
	holdFirst := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			select {
			case <-started: // not the first message
				return h(msg)
			default:
			}
			close(started)
			<-release
			out, err := h(msg)
			handled <- err
			return out, err
		}
	}
	r, err := consumer.NewRouter(brk, b.c, poison.NewStore(queries.New(b.pool)), logger, consumer.RouterConfig{
		MaxRetries: 1, RetryInitialInterval: 10 * time.Millisecond, CloseTimeout: 5 * time.Second,
		Inner: []message.HandlerMiddleware{holdFirst},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-r.Running()

	first := b.newOrder(t)
	if err := brk.Publisher.Publish(messages.TopicOrderPaid, orderPaid(t, first, "evt_in_hand")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(15 * time.Second):
		t.Fatal("the message never reached the handler")
	}
	cancel() // SIGTERM while the handler runs
	time.Sleep(300 * time.Millisecond)
	close(release)
	if err := <-handled; err != nil {
		t.Fatalf("the handler in hand at shutdown failed: %v (its context was cancelled under it)", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("router: %v", err)
	}

	// The next worker: the message in hand must not come back. The postgres
	// subscriber delivers in order, so once a later message is handled, an
	// unacked earlier one would have been handled again before it.
	b.startRouter(t)
	second := b.newOrder(t)
	if err := brk.Publisher.Publish(messages.TopicOrderPaid, orderPaid(t, second, "evt_after_restart")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the later message", func() bool { return b.audit(t, second.ID).ExecutionsOrderPaid == 1 })
	if n := b.audit(t, first.ID).ExecutionsOrderPaid; n != 1 {
		t.Errorf("the message in hand at shutdown ran %d times, want 1: its ack was lost", n)
	}
}
