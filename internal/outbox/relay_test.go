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

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// stallingPublisher is the broker as the relay sees it: it records every
// message, and holds the publish of one order's messages until released.
// stalled, if not nil, is closed when that publish begins to wait.
type stallingPublisher struct {
	stallOrder string
	release    chan struct{}
	stalled    chan struct{}
	stallOnce  sync.Once

	mu        sync.Mutex
	published []string // order ids, in publish order
}

func (p *stallingPublisher) Publish(_ string, msgs ...*message.Message) error {
	for _, m := range msgs {
		orderID := m.Metadata.Get(messages.MetadataOrderID)
		if orderID == p.stallOrder {
			if p.stalled != nil {
				p.stallOnce.Do(func() { close(p.stalled) })
			}
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
	q := queries.New(pool)

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

// A relay stopped gracefully (SIGTERM on a deploy) while a publish is in hand
// finishes that publish and commits the acks of its batch: the next relay
// re-publishes nothing. Without the drain (broker.NewDraining) the
// forwarder's shutdown cancels the poll's transaction, which rolls back the
// acks of every message of the batch published so far, and the next relay
// publishes them all again.
func TestStoppedRelayRepublishesNothing(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	q := queries.New(pool)

	const orders = 20
	ids := writeConfirmations(t, pool, orders)

	// The last order's publish stalls: its lane has handled the rows before
	// it, acked in memory, not yet committed.
	first := &stallingPublisher{stallOrder: ids[orders-1], release: make(chan struct{}), stalled: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	relay, err := outbox.NewRelay(pool, first, watermill.NopLogger{}, outbox.RelayConfig{PollInterval: 20 * time.Millisecond, CloseTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	waitFor(t, 10*time.Second, "every other order relayed", func() bool { return first.count() == orders-1 })
	select {
	case <-first.stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the last order's publish did not begin within 10s")
	}
	// Stop while the publish is in hand; the broker answers a moment later.
	cancel()
	time.Sleep(200 * time.Millisecond)
	close(first.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	second := &stallingPublisher{}
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	relay, err = outbox.NewRelay(pool, second, watermill.NopLogger{}, outbox.RelayConfig{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- relay.Run(ctx) }()
	waitFor(t, 10*time.Second, "the outbox backlog at 0", func() bool {
		backlog, err := q.OutboxBacklog(t.Context())
		return err == nil && backlog == 0
	})
	// Nothing is waiting; give a re-relay, if any, a few polls to show.
	time.Sleep(300 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if first.count() != orders || second.count() != 0 {
		t.Fatalf("the stopped relay published %d, the next one %d again (%v); want %d and 0",
			first.count(), second.count(), second.published, orders)
	}
}

// waitFor polls cond until it holds, or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeConfirmations writes one order_confirmed for each of n new orders to
// the outbox, a transaction each, and returns the order ids in that order.
func writeConfirmations(t *testing.T, pool *pgxpool.Pool, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
		msg, err := messages.NewOrderConfirmed(uuid.MustParse(ids[i]))
		if err != nil {
			t.Fatal(err)
		}
		if err := postgres.InTx(t.Context(), pool, func(tx pgx.Tx) error {
			return outbox.Publish(t.Context(), tx, messages.TopicOrderConfirmed, msg)
		}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// A relay stopped while it is still starting (a SIGTERM right after a deploy
// started the worker) stops cleanly. watermill's Router.Close holds the
// router's handler lock while it waits for the handlers, so a Close that
// comes before the forwarder has started its handler waits for a handler
// that can never start, and fails with "router close timeout" after
// CloseTimeout: the worker then exits 1 on a plain SIGTERM. Run waits for the
// forwarder to be running before it closes it.
func TestRelayStoppedWhileStartingStopsCleanly(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	writeConfirmations(t, pool, 5)
	for i := range 20 {
		relay, err := outbox.NewRelay(pool, &stallingPublisher{}, watermill.NopLogger{}, outbox.RelayConfig{
			PollInterval: 20 * time.Millisecond, CloseTimeout: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- relay.Run(ctx) }()
		time.Sleep(time.Duration(i%5) * time.Millisecond) // from before start-up to well into it
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("stop %d, %dms after start: %v", i, i%5, err)
		}
	}
}
