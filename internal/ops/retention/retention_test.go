package retention_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

func TestRunOnceRemovesOnlyWhatNoRedeliveryNeeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := pgtest.NewDatabase(t)
	exec(t, pool, `
		INSERT INTO webhook_inbox (event_id, event_type, received_at) VALUES
			('evt_old', 'payment.succeeded', now() - interval '8 days'),
			('evt_young', 'payment.succeeded', now() - interval '2 days');
		INSERT INTO consumer_inbox (consumer, message_id, processed_at) VALUES
			('order_confirmed', 'old', now() - interval '8 days'),
			('order_confirmed', 'old-but-re-enqueued', now() - interval '8 days'),
			('order_confirmed', 'young', now() - interval '2 days');
		INSERT INTO executions (handler, message_id, created_at) VALUES
			('order_paid', 'old', now() - interval '31 days'),
			('order_paid', 'young', now() - interval '8 days');`)
	// An operator re-enqueued "old-but-re-enqueued" an hour ago: its copy can
	// still be delivered, so its inbox row must stay.
	reenqueue(t, pool, "old-but-re-enqueued")

	c, err := retention.NewCleaner(pool, retention.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (retention.Result{WebhookInbox: 1, ConsumerInbox: 1, Executions: 1}); got != want {
		t.Errorf("first run removed %+v, want %+v", got, want)
	}
	if left := strings(t, pool, `SELECT event_id FROM webhook_inbox UNION ALL SELECT message_id FROM consumer_inbox
		UNION ALL SELECT 'exec:' || message_id FROM executions ORDER BY 1`); left != "evt_young,exec:young,old-but-re-enqueued,young" {
		t.Errorf("rows left: %s", left)
	}

	t.Run("a second run removes nothing", func(t *testing.T) {
		if got, err := c.RunOnce(ctx); err != nil || got != (retention.Result{}) {
			t.Errorf("second run removed %+v (err %v), want nothing", got, err)
		}
	})
}

func TestConcurrentCleanersRemoveEachRowOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := pgtest.NewDatabase(t)
	exec(t, pool, `INSERT INTO consumer_inbox (consumer, message_id, processed_at)
		SELECT 'order_confirmed', 'm' || i, now() - interval '10 days' FROM generate_series(1, 2500) AS i`)

	var mu sync.Mutex
	var removed int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := retention.NewCleaner(pool, retention.Config{BatchSize: 100})
			if err != nil {
				t.Error(err)
				return
			}
			r, err := c.RunOnce(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			removed += r.ConsumerInbox
			mu.Unlock()
		}()
	}
	wg.Wait()
	if removed != 2500 {
		t.Errorf("four concurrent cleaners removed %d rows in total, want each of the 2500 once", removed)
	}
	if left := strings(t, pool, `SELECT count(*)::text FROM consumer_inbox`); left != "0" {
		t.Errorf("%s rows left, want 0", left)
	}
}

func TestConfigRefusesAWindowShorterThanTheRedeliveryHorizon(t *testing.T) {
	t.Parallel()
	for _, cfg := range []retention.Config{
		{InboxWindow: time.Hour},
		{InboxWindow: retention.MinInboxWindow - time.Second},
		{ExecutionWindow: -time.Hour},
	} {
		if _, err := retention.NewCleaner(nil, cfg); err == nil {
			t.Errorf("NewCleaner(%+v) accepted it, want an error", cfg)
		}
	}
}

// exec runs test-only SQL (fixtures with timestamps in the past).
func exec(t *testing.T, pool *pgxpool.Pool, sql string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

// strings returns the first column of a query, comma-joined.
func strings(t *testing.T, pool *pgxpool.Pool, sql string) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for i, v := range vals {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

// reenqueue writes a copy of message id to the outbox now, as
// `orderpaid reprocess --message` does.
func reenqueue(t *testing.T, pool *pgxpool.Pool, id string) {
	t.Helper()
	msg, err := messages.NewOrderConfirmed([16]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	msg.UUID = id
	if err := postgres.InTx(context.Background(), pool, func(tx pgx.Tx) error {
		return outbox.Publish(context.Background(), tx, messages.TopicOrderConfirmed, msg)
	}); err != nil {
		t.Fatal(err)
	}
}
