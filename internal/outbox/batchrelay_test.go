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

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
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
