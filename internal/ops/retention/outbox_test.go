package retention_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// countingPublisher is the broker as the relay sees it: it counts what it is
// given.
type countingPublisher struct{ n atomic.Int64 }

func (p *countingPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.n.Add(int64(len(msgs)))
	return nil
}
func (p *countingPublisher) Close() error { return nil }

// relayAll runs the real relay until the outbox backlog is 0, then stops it.
func relayAll(t *testing.T, pool *pgxpool.Pool, pub message.Publisher) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	relay, err := outbox.NewRelay(pool, pub, watermill.NopLogger{}, outbox.RelayConfig{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		backlog, err := queries.New(pool).OutboxBacklog(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if backlog == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox backlog still %d after 10s", backlog)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// publishN writes n confirmations, of n orders, to the outbox.
func publishN(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	for range n {
		reenqueue(t, pool, uuid.NewString())
	}
}

// The outbox is cleaned of what the relay has published and the window no
// longer needs, and of nothing else: an old row the relay has not published
// yet stays (it is the only copy of that message), and a young relayed row
// stays (the consumer inbox clean-up and reprocess read it). The relay then
// goes on from where it was. Without the relay-position condition in
// RetentionDeleteOutbox the unpublished rows are removed (lost messages);
// without the cutoff, the young ones.
func TestOutboxCleanupRemovesOnlyRelayedRowsPastTheWindow(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	pub := &countingPublisher{}
	old := `UPDATE watermill_outbox SET created_at = created_at - interval '31 days' WHERE created_at > localtimestamp - interval '10 minutes'`

	publishN(t, pool, 10) // relayed, then 31 days old: removed
	relayAll(t, pool, pub)
	exec(t, pool, old)
	publishN(t, pool, 3) // relayed, young: kept
	relayAll(t, pool, pub)
	exec(t, pool, `UPDATE watermill_outbox SET created_at = localtimestamp - interval '1 hour' WHERE created_at > localtimestamp - interval '10 minutes'`)
	publishN(t, pool, 5) // not relayed yet, 31 days old: kept
	exec(t, pool, old)
	if got := pub.n.Load(); got != 13 {
		t.Fatalf("relayed %d before the clean-up, want 13", got)
	}

	c, err := retention.NewCleaner(pool, retention.Config{BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.RunOnce(t.Context()); err != nil || got.Outbox != 10 {
		t.Fatalf("clean-up removed %d outbox rows (err %v), want the 10 old relayed ones", got.Outbox, err)
	}
	if left := strings(t, pool, `SELECT count(*)::text FROM watermill_outbox`); left != "8" {
		t.Fatalf("%s outbox rows left, want 8 (3 young relayed, 5 not relayed)", left)
	}
	if got, err := c.RunOnce(t.Context()); err != nil || got.Outbox != 0 {
		t.Fatalf("a second clean-up removed %d outbox rows (err %v), want 0", got.Outbox, err)
	}

	relayAll(t, pool, pub)
	if got := pub.n.Load(); got != 18 {
		t.Fatalf("relayed %d in all, want 18: the 5 waiting ones once more, nothing twice", got)
	}
}

// Relayed from the WAL (OUTBOX_RELAY=logical), the polling relay's
// positions say nothing: the slot keeps each insert until it confirmed it,
// so an old row goes whatever those positions are, and a young one stays.
func TestOutboxCleanupFromTheWALGoesByAgeAlone(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	publishN(t, pool, 4) // never relayed by the polling relay, 31 days old: removed
	exec(t, pool, `UPDATE watermill_outbox SET created_at = created_at - interval '31 days'`)
	publishN(t, pool, 2) // young: kept
	c, err := retention.NewCleaner(pool, retention.Config{BatchSize: 4, FromWAL: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.RunOnce(t.Context()); err != nil || got.Outbox != 4 {
		t.Fatalf("clean-up removed %d outbox rows (err %v), want the 4 old ones", got.Outbox, err)
	}
	if left := strings(t, pool, `SELECT count(*)::text FROM watermill_outbox`); left != "2" {
		t.Fatalf("%s outbox rows left, want the 2 young ones", left)
	}
}

func TestConfigRefusesAnOutboxWindowShorterThanTheInboxWindow(t *testing.T) {
	t.Parallel()
	if _, err := retention.NewCleaner(nil, retention.Config{OutboxWindow: retention.DefaultInboxWindow - time.Hour}); err == nil {
		t.Error("NewCleaner accepted an outbox window shorter than the inbox window")
	}
}
