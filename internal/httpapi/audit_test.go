package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// auditBody is GET /orders/{id}/audit as a client reads it; Cleaned is raw
// so the test sees null apart from [].
type auditBody struct {
	Executions map[string]int64 `json:"executions"`
	Effects    map[string]int64 `json:"effects"`
	Cleaned    json.RawMessage  `json:"cleaned"`
}

func (b *bundle) audit(t *testing.T, id uuid.UUID) auditBody {
	t.Helper()
	resp, err := http.Get(b.url + "/orders/" + id.String() + "/audit")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a auditBody
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET audit: %d, %v", resp.StatusCode, err)
	}
	return a
}

// An order whose e-mail went out a month ago, and retention has run: its
// execution log, its outbox rows and its consumer inbox rows are gone, so
// the audit's executions, confirmation_enqueued and confirmation_delivered
// read 0. The audit says those counts were cleaned, and still counts the
// effects retention never touches (paid, commission, notification_sent). An
// order paid today, cleaned of nothing, says nothing was cleaned. Without
// audit_cleaned (written by the retention deletes) the old order's audit is
// just zeros, as if no confirmation had ever been sent.
func TestAuditNamesTheEvidenceRetentionCleaned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	provider := fakes.NewNotifier()
	fakeSrv := httptest.NewServer(fakes.New(fakes.NewGateway(fakes.GatewayConfig{}), provider))
	t.Cleanup(fakeSrv.Close)
	consumers := consumer.NewConsumers(b.pool, notify.NewClient(fakeSrv.URL, nil))

	old, recent := b.newOrder(t), b.newOrder(t)
	for i, o := range []queries.Order{old, recent} {
		evt := fmt.Sprintf("evt_audit_%d", i)
		body := eventBody(evt, o.ID.String(), 10000)
		if status, out := b.post(t, body, webhook.Sign(secret, time.Now(), body)); status/100 != 2 {
			t.Fatalf("webhook for order %d: %d %v", i, status, out)
		}
		paid, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: 10000, Source: "webhook:" + evt})
		if err != nil {
			t.Fatal(err)
		}
		confirmed, err := messages.NewOrderConfirmed(o.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []struct {
			fn  func(*message.Message) error
			msg *message.Message
		}{{consumers.HandleOrderPaid, paid}, {consumers.HandleOrderConfirmed, confirmed}} {
			h.msg.SetContext(ctx)
			if err := h.fn(h.msg); err != nil {
				t.Fatalf("order %d: handler: %v", i, err)
			}
		}
	}
	relayAll(t, b.pool)

	// A month passes for the old order only (the outbox is matched on its
	// payload, as written, not on the column under test).
	for _, sql := range []string{
		`UPDATE executions SET created_at = now() - interval '31 days' WHERE order_id = $1`,
		`UPDATE consumer_inbox SET processed_at = now() - interval '31 days' WHERE order_id = $1`,
		`UPDATE webhook_inbox SET received_at = now() - interval '31 days' WHERE order_id = $1`,
		`UPDATE watermill_outbox SET created_at = created_at - interval '31 days' WHERE payload -> 'metadata' ->> 'order_id' = $1::text`,
	} {
		if _, err := b.pool.Exec(ctx, sql, old.ID); err != nil {
			t.Fatal(err)
		}
	}
	c, err := retention.NewCleaner(b.pool, retention.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.RunOnce(ctx); err != nil || r.Executions != 2 || r.ConsumerInbox != 1 || r.Outbox != 2 {
		t.Fatalf("retention removed %+v (err %v), want the old order's 2 executions, 1 consumer inbox row (order_confirmed's) and 2 outbox rows", r, err)
	}

	a := b.audit(t, old.ID)
	var cleaned []string
	if err := json.Unmarshal(a.Cleaned, &cleaned); err != nil {
		t.Fatalf("old order: cleaned = %s: %v", a.Cleaned, err)
	}
	if want := []string{"confirmation_delivered", "confirmation_enqueued", "executions"}; !slices.Equal(cleaned, want) {
		t.Errorf("old order: cleaned = %s, want %q: its executions, outbox and inbox rows are gone", a.Cleaned, want)
	}
	if e := a.Effects; e["paid"] != 1 || e["commission"] != 1 || e["notification_sent"] != 1 || e["confirmation_enqueued"] != 0 {
		t.Errorf("old order: effects %v, want paid, commission and notification_sent 1 (never cleaned), confirmation_enqueued 0", e)
	}

	a = b.audit(t, recent.ID)
	if string(a.Cleaned) != "[]" {
		t.Errorf("recent order: cleaned = %s, want []: retention removed nothing of it", a.Cleaned)
	}
	if e, x := a.Effects, a.Executions; e["confirmation_enqueued"] != 1 || e["confirmation_delivered"] != 1 || x["order_paid"] != 1 || x["order_confirmed"] != 1 {
		t.Errorf("recent order: effects %v, executions %v, want confirmation_enqueued, confirmation_delivered and each execution 1", e, x)
	}
	if n := len(provider.Notifications()); n != 2 {
		t.Errorf("provider sent %d e-mails, want 2 (one per order)", n)
	}
}

// The audit is public and the outbox keeps 30 days of messages: the audit
// must read an order's outbox rows through the order id index, never the
// whole table. The real query runs in a transaction on an outbox of 20,000
// rows, and PostgreSQL's own counters for that transaction
// (pg_stat_xact_user_tables) say how it read the outbox. Matching
// payload -> 'metadata' ->> 'order_id' (the query before migration 00008)
// reads it sequentially. The reprocess tool's lookup by message id is held
// to the same rule.
func TestAuditAndMessageLookupReadTheOutboxByIndex(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `
		INSERT INTO watermill_outbox (uuid, payload, metadata, transaction_id)
		SELECT gen_random_uuid()::text,
		       json_build_object('destination_topic', 'order_confirmed', 'uuid', gen_random_uuid()::text, 'payload', '',
		                         'metadata', json_build_object('order_id', gen_random_uuid()::text)),
		       '{}'::json, pg_current_xact_id()
		FROM generate_series(1, 20000);
		ANALYZE watermill_outbox`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func(q *queries.Queries) error
	}{
		{"AuditOrder", func(q *queries.Queries) error { _, err := q.AuditOrder(ctx, uuid.New()); return err }},
		{"OutboxFindByMessageID", func(q *queries.Queries) error {
			_, err := q.OutboxFindByMessageID(ctx, uuid.NewString())
			if err == pgx.ErrNoRows {
				err = nil
			}
			return err
		}},
	} {
		seq, idx := outboxScans(t, pool, tc.run)
		if seq != 0 || idx == 0 {
			t.Errorf("%s read the outbox with %d sequential and %d index scans, want only index scans", tc.name, seq, idx)
		}
	}
}

// outboxScans runs fn in a transaction and returns the sequential and index
// scans of watermill_outbox it made, by PostgreSQL's counters.
func outboxScans(t *testing.T, pool *pgxpool.Pool, fn func(q *queries.Queries) error) (seq, idx int64) {
	t.Helper()
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := fn(queries.New(tx)); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(t.Context(), `SELECT seq_scan, coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables
		WHERE relname = 'watermill_outbox'`).Scan(&seq, &idx); err != nil {
		t.Fatal(err)
	}
	return seq, idx
}

// discard is the broker as the relay sees it, for a test that runs the
// consumers itself.
type discard struct{}

func (discard) Publish(string, ...*message.Message) error { return nil }
func (discard) Close() error                              { return nil }

// relayAll runs the real relay until the outbox backlog is 0, so retention
// may clean what it relayed.
func relayAll(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	relay, err := outbox.NewRelay(pool, discard{}, watermill.NopLogger{}, outbox.RelayConfig{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	// 60s: the relay reads only below the server's oldest open transaction,
	// and the suite's other packages share the server.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		backlog, err := queries.New(pool).OutboxBacklog(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if backlog == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox backlog still %d after 60s", backlog)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
