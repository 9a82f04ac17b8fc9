package outbox_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// recordingPublisher is the broker as the batch relay sees it: it records
// each call and, while failOnce is set, refuses the first call once.
type recordingPublisher struct {
	mu       sync.Mutex
	calls    [][]string // the order ids of each call
	failOnce bool
}

func (p *recordingPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failOnce {
		p.failOnce = false
		return errors.New("broker unavailable")
	}
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.Metadata.Get(messages.MetadataOrderID))
	}
	p.calls = append(p.calls, ids)
	return nil
}

func (p *recordingPublisher) Close() error { return nil }

// The batch relay publishes each lane's rows several per call, every row
// once, and within a lane in the order they were written; a failed publish
// is retried from that row, and the outbox drains.
func TestBatchRelayPublishesInBatchesInOrderAndRetries(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ids := writeConfirmations(t, pool, 40)
	pub := &recordingPublisher{failOnce: true}
	relay := outbox.NewBatchRelay(pool, pub, slog.New(slog.NewTextHandler(io.Discard, nil)), 25, outbox.RelayConfig{PollInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	// 90s: a row is relayed only once every transaction begun before it has
	// ended on the whole server, and the full test run holds some open.
	waitFor(t, 90*time.Second, "the outbox drained", func() bool {
		n, err := queries.New(pool).OutboxBacklog(context.Background())
		return err == nil && n == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	pub.mu.Lock()
	defer pub.mu.Unlock()
	var got []string
	biggest := 0
	for _, c := range pub.calls {
		got = append(got, c...)
		biggest = max(biggest, len(c))
	}
	if biggest < 2 {
		t.Errorf("calls %v: the relay never published more than one message at once", pub.calls)
	}
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(sorted, want) {
		t.Fatalf("published %d messages %v, want each of the %d once", len(got), got, len(ids))
	}
	// Within one lane (one call), rows keep the order they were written in.
	pos := map[string]int{}
	for i, id := range ids {
		pos[id] = i
	}
	for _, c := range pub.calls {
		for i := 1; i < len(c); i++ {
			if pos[c[i-1]] > pos[c[i]] {
				t.Fatalf("call %v publishes out of the written order", c)
			}
		}
	}
}

// topicPublisher records each call's topic and message ids.
type topicPublisher struct {
	mu    sync.Mutex
	calls []topicCall
}

type topicCall struct {
	topic string
	ids   []string
}

func (p *topicPublisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := topicCall{topic: topic}
	for _, m := range msgs {
		c.ids = append(c.ids, m.UUID)
	}
	p.calls = append(p.calls, c)
	return nil
}

func (p *topicPublisher) Close() error { return nil }

// Rows whose topics alternate (one order's order_confirmed and
// refund_confirmed, written turn by turn into one lane) go out one call
// per topic, not one per row, and each topic's rows keep their written
// order: the only order a topic's consumers can see.
func TestBatchRelayPublishesOneCallPerTopic(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	orderID := uuid.New() // one order: one lane
	want := map[string][]string{}
	for i := range 24 {
		topic := messages.TopicOrderConfirmed
		if i%2 == 1 {
			topic = messages.TopicRefundConfirmed
		}
		msg, err := messages.NewOrderConfirmed(orderID)
		if err != nil {
			t.Fatal(err)
		}
		msg.UUID = uuid.NewString()
		want[topic] = append(want[topic], msg.UUID)
		if err := postgres.InTx(t.Context(), pool, func(tx pgx.Tx) error {
			return outbox.Publish(t.Context(), tx, topic, msg)
		}); err != nil {
			t.Fatal(err)
		}
	}
	pub := &topicPublisher{}
	relay := outbox.NewBatchRelay(pool, pub, slog.New(slog.NewTextHandler(io.Discard, nil)), 50, outbox.RelayConfig{PollInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	waitFor(t, 90*time.Second, "the outbox drained", func() bool { // see above
		n, err := queries.New(pool).OutboxBacklog(context.Background())
		return err == nil && n == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	got := map[string][]string{}
	biggest := 0
	for _, c := range pub.calls {
		got[c.topic] = append(got[c.topic], c.ids...)
		biggest = max(biggest, len(c.ids))
	}
	for topic, ids := range want {
		if !slices.Equal(got[topic], ids) {
			t.Errorf("%s: published %v, want %v in that order", topic, got[topic], ids)
		}
	}
	if biggest < 2 {
		t.Errorf("%d calls, none with more than one message: a call per row, not per topic", len(pub.calls))
	}
}
