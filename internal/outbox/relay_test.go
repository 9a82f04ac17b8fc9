package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/db"
	"github.com/orderpaid/orderpaid/internal/event"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/pgtest"
	"github.com/orderpaid/orderpaid/internal/postgres"
)

// stallingPublisher is the broker as the relay sees it: it records every
// message, and holds the publish of one order's messages until released.
type stallingPublisher struct {
	stallOrder string
	release    chan struct{}

	mu        sync.Mutex
	published []string // order ids, in publish order
}

func (p *stallingPublisher) Publish(_ string, msgs ...*message.Message) error {
	for _, m := range msgs {
		orderID := m.Metadata.Get(event.MetadataOrderID)
		if orderID == p.stallOrder {
			<-p.release
		}
		p.mu.Lock()
		p.published = append(p.published, orderID)
		p.mu.Unlock()
	}
	return nil
}

func (p *stallingPublisher) Close() error { return nil }

func (p *stallingPublisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.published)
}

// The relay reads the outbox in lanes by order id: while the broker takes
// its time over one order's message, the other orders' messages are still
// relayed, and the backlog (OutboxBacklog, which repeats the lane count in
// SQL) counts exactly what is not relayed yet. With RelayLanes = 1 the first
// check fails (everything waits behind the stalled publish); with another
// lane count in the backlog query, the backlog never reaches 0.
func TestRelayLanesKeepOtherOrdersMoving(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	q := db.New(pool)

	const orders = 20
	ids := writeConfirmations(t, pool, orders)
	if backlog, err := q.OutboxBacklog(ctx); err != nil || backlog != orders {
		t.Fatalf("backlog before the relay runs = %d (err %v), want %d", backlog, err, orders)
	}

	pub := &stallingPublisher{stallOrder: ids[0], release: make(chan struct{})}
	relay, err := outbox.NewRelay(pool, pub, watermill.NopLogger{}, outbox.RelayConfig{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()

	// The stalled order is the first row: with one lane nothing passes it.
	deadline := time.Now().Add(10 * time.Second)
	for pub.count() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if pub.count() == 0 {
		t.Fatal("no message relayed within 10s while one order's publish is stalled: one stalled publish stops every order")
	}
	close(pub.release)
	for {
		backlog, err := q.OutboxBacklog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if backlog == 0 && pub.count() >= orders {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %d of %d relayed, backlog says %d waiting", pub.count(), orders, backlog)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// writeConfirmations writes one order_confirmed for each of n new orders to
// the outbox, a transaction each, and returns the order ids in that order.
func writeConfirmations(t *testing.T, pool *pgxpool.Pool, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
		msg, err := event.NewOrderConfirmed(uuid.MustParse(ids[i]))
		if err != nil {
			t.Fatal(err)
		}
		if err := postgres.InTx(t.Context(), pool, func(tx pgx.Tx) error {
			return outbox.Publish(t.Context(), tx, event.TopicOrderConfirmed, msg)
		}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}
