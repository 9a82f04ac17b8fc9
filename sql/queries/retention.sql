-- name: RetentionCutoffs :one
-- The run's three cutoffs, on the database's clock: now() minus each window.
-- The rows were stamped by this clock (received_at, processed_at,
-- created_at default to now()), so their age is measured by it too. A
-- cutoff taken from the cleaner's own clock moves by as much as that clock
-- is off: a host 7 days ahead would remove inbox rows written minutes ago,
-- while their messages can still come back. Every DELETE of the run takes
-- its cutoff from here, so one run cuts every table at the same instant.
SELECT (now() - sqlc.arg(inbox_window_ms)::bigint * interval '1 millisecond')::timestamptz AS inbox_cutoff,
       (now() - sqlc.arg(execution_window_ms)::bigint * interval '1 millisecond')::timestamptz AS execution_cutoff,
       (now() - sqlc.arg(outbox_window_ms)::bigint * interval '1 millisecond')::timestamptz AS outbox_cutoff;

-- name: RetentionDeleteWebhookInbox :execrows
-- Provider events received before cutoff. A provider retries a delivery for
-- a bounded time (Stripe: 3 days); past that, the same event id cannot come
-- back, so its inbox row can go.
DELETE FROM webhook_inbox
WHERE event_id IN (
    SELECT w.event_id FROM webhook_inbox w
    WHERE w.received_at < sqlc.arg(cutoff)::timestamptz
    ORDER BY w.received_at
    LIMIT sqlc.arg(batch_size)
    FOR UPDATE SKIP LOCKED
);

-- name: RetentionDeleteConsumerInbox :one
-- Consumer inbox rows processed before cutoff, except those whose message
-- still has a copy in the outbox written after cutoff: a copy re-enqueued
-- recently (reprocess --message, a relay re-forward) can still be delivered,
-- and its inbox row must still answer "already handled".
--
-- Each run takes the oldest batch_size rows past the cutoff first (a range
-- of the processed_at index), and only then looks for a young copy of each,
-- through the outbox's message id column (migration 00008's index): at most
-- batch_size index probes. Looking for copies before taking the batch let
-- the planner hash the whole outbox for every batch (1 s per batch with
-- 1,000,000 outbox rows, 70 s for 49,000 inbox rows). The cleaner repeats it
-- until a batch removes nothing, so a run stops early only at a batch of
-- rows that all have young copies, which the next runs remove once those
-- copies age: it may keep a row longer, never shorter.
--
-- An order_confirmed row is the audit's confirmation_delivered: the same
-- statement notes in audit_cleaned that the order's count lost a row, so the
-- audit says so instead of reporting 0 (sorted by order, so two cleaners
-- noting the same orders take their locks in one order). Returns how many
-- inbox rows it removed.
WITH gone AS (
    DELETE FROM consumer_inbox
    WHERE (consumer, message_id) IN (
        SELECT c.consumer, c.message_id
        FROM (
            SELECT h.consumer, h.message_id FROM consumer_inbox h
            WHERE h.processed_at < sqlc.arg(cutoff)::timestamptz
            ORDER BY h.processed_at
            LIMIT sqlc.arg(batch_size)
            FOR UPDATE SKIP LOCKED
        ) c
        WHERE NOT EXISTS (
            SELECT 1 FROM watermill_outbox o
            WHERE o.message_id = c.message_id
              AND o.created_at >= sqlc.arg(cutoff)::timestamptz::timestamp)
    )
    RETURNING consumer, order_id
), noted AS (
    INSERT INTO audit_cleaned (order_id, evidence)
    SELECT DISTINCT g.order_id, 'confirmation_delivered' FROM gone g
    WHERE g.consumer = 'order_confirmed' AND g.order_id IS NOT NULL
    ORDER BY g.order_id
    ON CONFLICT (order_id, evidence) DO NOTHING
)
SELECT count(*)::bigint AS removed FROM gone;

-- name: RetentionDeleteExecutions :one
-- Execution log rows written before cutoff. The log is evidence for the
-- audit, never consulted by a guard; the same statement notes in
-- audit_cleaned each order whose executions lost rows. Returns how many log
-- rows it removed.
WITH gone AS (
    DELETE FROM executions
    WHERE id IN (
        SELECT e.id FROM executions e
        WHERE e.created_at < sqlc.arg(cutoff)::timestamptz
        ORDER BY e.id
        LIMIT sqlc.arg(batch_size)
        FOR UPDATE SKIP LOCKED
    )
    RETURNING order_id
), noted AS (
    INSERT INTO audit_cleaned (order_id, evidence)
    SELECT DISTINCT g.order_id, 'executions' FROM gone g
    WHERE g.order_id IS NOT NULL
    ORDER BY g.order_id
    ON CONFLICT (order_id, evidence) DO NOTHING
)
SELECT count(*)::bigint AS removed FROM gone;

-- name: RetentionDeleteOutbox :one
-- Outbox rows written before cutoff and already relayed: at or before the
-- position of the relay lane that reads them (the same lane expression and
-- (transaction id, offset) comparison as OutboxBacklog). A row not relayed
-- yet is never removed, however old. The relay reads only after its
-- positions, so removing rows before them changes nothing it does; the
-- cutoff keeps every copy the consumer inbox clean-up and the reprocess tool
-- still look at (RetentionDeleteConsumerInbox, ReprocessMessageAge).
--
-- Each run looks at the oldest batch_size rows only (the head of the primary
-- key, which is the oldest transactions) and removes those of them that
-- qualify; the cleaner repeats it until a head has none. So a run stops at the
-- first batch of young or unrelayed rows instead of reading the whole outbox
-- to find that nothing more is old enough.
--
-- With from_wal (OUTBOX_RELAY=logical) the rows are relayed from the WAL,
-- which keeps every insert until the slot confirmed it: a row's age is then
-- the only condition, and removing it changes nothing the relay reads.
--
-- A confirmation the flow enqueued is the audit's confirmation_enqueued: the
-- same statement notes in audit_cleaned that the order's count lost a row.
-- Returns how many outbox rows it removed.
WITH gone AS (
    DELETE FROM watermill_outbox
    WHERE (transaction_id, "offset") IN (
        SELECT o.transaction_id, o."offset"
        FROM (
            SELECT h.transaction_id, h."offset", h.created_at, h.uuid, h.payload FROM watermill_outbox h
            ORDER BY h.transaction_id, h."offset"
            LIMIT sqlc.arg(batch_size)
            FOR UPDATE SKIP LOCKED
        ) o
        LEFT JOIN watermill_offsets_outbox r
          ON r.consumer_group = 'outbox_relay.lane' || (abs(hashtext(coalesce(o.payload -> 'metadata' ->> 'order_id', o.uuid))::bigint) % 2) || 'of2'
        WHERE o.created_at < sqlc.arg(cutoff)::timestamptz::timestamp
          AND (sqlc.arg(from_wal)::boolean
               OR (o.transaction_id, o."offset") <= (r.last_processed_transaction_id, r.offset_acked))
    )
    RETURNING order_id, payload ->> 'destination_topic' AS topic, payload -> 'metadata' ->> 'replayed_by' AS replayed_by
), noted AS (
    INSERT INTO audit_cleaned (order_id, evidence)
    SELECT DISTINCT g.order_id, 'confirmation_enqueued' FROM gone g
    WHERE g.topic = 'order_confirmed' AND g.replayed_by IS NULL AND g.order_id IS NOT NULL
    ORDER BY g.order_id
    ON CONFLICT (order_id, evidence) DO NOTHING
)
SELECT count(*)::bigint AS removed FROM gone;
