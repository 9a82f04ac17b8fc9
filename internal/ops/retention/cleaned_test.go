package retention_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Retention notes in audit_cleaned what the audit counts, and only that:
// an order's execution log rows (executions), its order_confirmed inbox row
// (confirmation_delivered) and the confirmation the flow enqueued
// (confirmation_enqueued). An order_paid outbox row, an operator's replay
// (replayed_by, which the audit does not count) and rows without an order
// are removed without a note: the audit of their order has lost nothing.
func TestRetentionNotesWhatTheAuditCounted(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	counted, replayed, other := uuid.New(), uuid.New(), uuid.New()
	exec(t, pool, `
		INSERT INTO executions (handler, message_id, order_id, created_at) VALUES
			('order_confirmed', 'm1', '`+counted.String()+`', now() - interval '31 days'),
			('order_paid', 'm2', NULL, now() - interval '31 days');
		INSERT INTO consumer_inbox (consumer, message_id, order_id, processed_at) VALUES
			('order_confirmed', 'm1', '`+counted.String()+`', now() - interval '8 days'),
			('order_paid', 'm3', '`+other.String()+`', now() - interval '8 days');`)
	confirmation, err := messages.NewOrderConfirmed(counted)
	if err != nil {
		t.Fatal(err)
	}
	replay, err := messages.NewOrderConfirmed(replayed)
	if err != nil {
		t.Fatal(err)
	}
	replay.Metadata.Set(messages.MetadataReplayedBy, "operator")
	paid, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: other, AmountCents: 100, Source: "backfill"})
	if err != nil {
		t.Fatal(err)
	}
	if err := postgres.InTx(t.Context(), pool, func(tx pgx.Tx) error {
		for _, m := range []struct {
			topic string
			msg   *message.Message
		}{{messages.TopicOrderConfirmed, confirmation}, {messages.TopicOrderConfirmed, replay}, {messages.TopicOrderPaid, paid}} {
			if err := outbox.Publish(t.Context(), tx, m.topic, m.msg); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	relayAll(t, pool, &countingPublisher{})
	exec(t, pool, `UPDATE watermill_outbox SET created_at = created_at - interval '31 days'`)

	c, err := retention.NewCleaner(pool, retention.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.RunOnce(t.Context()); err != nil || r.Executions != 2 || r.ConsumerInbox != 2 || r.Outbox != 3 {
		t.Fatalf("retention removed %+v (err %v), want 2 executions, 2 consumer inbox and 3 outbox rows", r, err)
	}
	got := strings(t, pool, `SELECT CASE order_id WHEN '`+counted.String()+`' THEN 'counted' WHEN '`+replayed.String()+`' THEN 'replayed'
		WHEN '`+other.String()+`' THEN 'other' ELSE order_id::text END || ':' || evidence FROM audit_cleaned ORDER BY 1`)
	if want := "counted:confirmation_delivered,counted:confirmation_enqueued,counted:executions"; got != want {
		t.Errorf("audit_cleaned holds %s, want %s", got, want)
	}
	if a, err := queries.New(pool).AuditOrder(t.Context(), counted); err != nil || len(a.Cleaned) != 3 {
		t.Errorf("AuditOrder(counted).Cleaned = %q (err %v), want its 3 kinds", a.Cleaned, err)
	}

	t.Run("a second run notes nothing more", func(t *testing.T) {
		if r, err := c.RunOnce(t.Context()); err != nil || r != (retention.Result{}) {
			t.Fatalf("second run removed %+v (err %v)", r, err)
		}
		if n := strings(t, pool, `SELECT count(*)::text FROM audit_cleaned`); n != "3" {
			t.Errorf("audit_cleaned has %s rows, want 3", n)
		}
	})
}

// The consumer inbox clean-up keeps a row whose message has a young copy in
// the outbox. It must find that copy through the message id index, one probe
// per candidate row: before migration 00008 it matched payload ->> 'uuid'
// and read the whole outbox for every batch (70 s for 49,000 inbox rows).
// The real query runs in a transaction on an outbox of 20,000 rows and 5,000
// old inbox rows (every one with a young copy: the worst case, nothing to
// remove), and PostgreSQL's counters for that transaction
// (pg_stat_xact_user_tables) say how it read the outbox. Looking for copies
// of every old row before taking the batch, even through the index, makes
// the planner hash the whole outbox instead.
func TestConsumerInboxCleanupProbesTheOutboxByIndex(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	exec(t, pool, `
		INSERT INTO watermill_outbox (uuid, payload, metadata, transaction_id)
		SELECT gen_random_uuid()::text,
		       json_build_object('destination_topic', 'order_confirmed', 'uuid', 'm' || i,
		                         'metadata', json_build_object('order_id', gen_random_uuid()::text)),
		       '{}'::json, pg_current_xact_id()
		FROM generate_series(1, 20000) AS i;
		INSERT INTO consumer_inbox (consumer, message_id, order_id, processed_at)
		SELECT 'order_confirmed', 'm' || i, gen_random_uuid(), now() - interval '8 days' FROM generate_series(1, 5000) AS i;
		ANALYZE watermill_outbox; ANALYZE consumer_inbox;`)
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	removed, err := queries.New(tx).RetentionDeleteConsumerInbox(t.Context(), queries.RetentionDeleteConsumerInboxParams{
		Cutoff: time.Now().Add(-retention.DefaultInboxWindow), BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if removed != 0 {
		t.Errorf("removed %d inbox rows, want 0: every message has a young copy in the outbox", removed)
	}
	var seq, idx int64
	if err := tx.QueryRow(t.Context(), `SELECT seq_scan, coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables
		WHERE relname = 'watermill_outbox'`).Scan(&seq, &idx); err != nil {
		t.Fatal(err)
	}
	if seq != 0 || idx == 0 {
		t.Errorf("the clean-up read the outbox with %d sequential and %d index scans, want only index scans", seq, idx)
	}
}

// The outbox's order_id column is computed from whatever metadata a message
// carries: a poison message an operator replays may hold anything there,
// and its INSERT must not fail on the cast (the column is NULL instead).
func TestOutboxOrderIDColumnTakesAnyMetadata(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	id := uuid.New()
	exec(t, pool, `INSERT INTO watermill_outbox (uuid, payload, metadata, transaction_id) VALUES
		('e1', '{"uuid":"m1","metadata":{"order_id":"`+id.String()+`"}}', '{}', pg_current_xact_id()),
		('e2', '{"uuid":"m2","metadata":{"order_id":"not-a-uuid"}}', '{}', pg_current_xact_id()),
		('e3', '{"uuid":"m3","metadata":{"order_id":"{`+id.String()+`}"}}', '{}', pg_current_xact_id()),
		('e4', '{"uuid":"m4","metadata":{}}', '{}', pg_current_xact_id()),
		('e5', '[1]', '{}', pg_current_xact_id()),
		('e6', NULL, '{}', pg_current_xact_id())`)
	got := strings(t, pool, `SELECT uuid || '=' || coalesce(message_id, '-') || '/' || coalesce(order_id::text, '-') FROM watermill_outbox ORDER BY uuid`)
	if want := "e1=m1/" + id.String() + ",e2=m2/-,e3=m3/-,e4=m4/-,e5=-/-,e6=-/-"; got != want {
		t.Errorf("message_id/order_id columns: %s, want %s", got, want)
	}
}
