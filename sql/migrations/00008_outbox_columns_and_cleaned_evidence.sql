-- +goose Up

-- The outbox's order id and message id as real columns, with indexes.
--
-- The audit (GET /orders/{id}/audit, which anyone may call) counted an
-- order's confirmations with payload -> 'metadata' ->> 'order_id' = $1, and
-- the consumer inbox clean-up looked for a young copy of each message with
-- payload ->> 'uuid' = message_id: both parsed the json payload of every row
-- the outbox keeps (30 days of them), on every call. The payload is the
-- forwarder's envelope {"destination_topic", "uuid", "payload", "metadata"}
-- (internal/outbox), and watermill's own uuid column is the envelope's id,
-- a fresh one per write, not the message's.
--
-- STORED generated columns: PostgreSQL computes them on every INSERT
-- watermill's publisher makes (it names its columns: uuid, payload,
-- metadata, transaction_id), so no code writes them, and the relay, which
-- selects its columns by name too, does not see them. An expression index
-- would do for a lookup, but the column can be read, joined and shown in
-- psql like any other, and the queries stay plain.
--
-- The order id cast cannot fail: every event the service writes carries the
-- canonical text of a uuid (event.MetadataOrderID), but a poison message an
-- operator replays carries whatever metadata it came with, so anything that
-- is not a uuid's text becomes NULL instead of failing the INSERT.
--
-- Adding a STORED column rewrites the table and its indexes under an ACCESS
-- EXCLUSIVE lock: the relay and every writer of the outbox wait for it (17 s
-- for 1,000,000 rows on the 2-core machine of docs/performance.md, 14 s of
-- them the rewrite). Run orderpaid retention before migrating a large outbox.
--
-- Evidence, EXPLAIN (ANALYZE) on 1,000,000 outbox rows and 49,000 consumer
-- inbox rows older than the window:
--   AuditOrder, confirmation_enqueued: "Index Scan using
--     watermill_outbox_order_idx on watermill_outbox o (actual rows=1
--     loops=1)", the whole audit 0.6 ms; before: "Parallel Seq Scan on
--     watermill_outbox o ... Rows Removed by Filter: 333333" (loops=3),
--     3,128 ms;
--   RetentionDeleteConsumerInbox, one batch of 1000: "Index Scan using
--     watermill_outbox_message_idx on watermill_outbox o (loops=1000)",
--     16 ms (51 ms when it deletes the 1000 and notes them); before: "Seq
--     Scan on watermill_outbox o (rows=1000000)" sorted to disk for a Merge
--     Anti Join, 3,098 ms per batch.
ALTER TABLE watermill_outbox
    ADD COLUMN order_id uuid GENERATED ALWAYS AS (
        CASE WHEN (payload -> 'metadata' ->> 'order_id') ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
             THEN (payload -> 'metadata' ->> 'order_id')::uuid END) STORED,
    ADD COLUMN message_id text GENERATED ALWAYS AS (payload ->> 'uuid') STORED;
CREATE INDEX watermill_outbox_order_idx ON watermill_outbox (order_id);
CREATE INDEX watermill_outbox_message_idx ON watermill_outbox (message_id, created_at);

-- What retention removed of each order's audit evidence: one row per order
-- and kind, written in the same statement as the DELETE (sql/queries/
-- retention.sql), so the audit can say "cleaned" instead of reporting 0 for
-- an effect whose evidence is gone. evidence names the audit field whose
-- count no longer holds every row: executions (the execution log),
-- confirmation_enqueued (the outbox), confirmation_delivered (the consumer
-- inbox). The effects the guards protect (paid, commission,
-- notification_sent, charges) are counted from tables retention never
-- touches.
CREATE TABLE audit_cleaned (
    order_id   uuid        NOT NULL,
    evidence   text        NOT NULL CHECK (evidence IN ('executions', 'confirmation_enqueued', 'confirmation_delivered')),
    cleaned_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (order_id, evidence)
);

-- +goose Down
DROP TABLE audit_cleaned;
DROP INDEX watermill_outbox_message_idx;
DROP INDEX watermill_outbox_order_idx;
ALTER TABLE watermill_outbox DROP COLUMN message_id, DROP COLUMN order_id;
