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

-- name: RetentionDeleteConsumerInbox :execrows
-- Consumer inbox rows processed before cutoff, except those whose message
-- still has a copy in the outbox written after cutoff: a copy re-enqueued
-- recently (reprocess --message, a relay re-forward) can still be delivered,
-- and its inbox row must still answer "already handled".
DELETE FROM consumer_inbox
WHERE (consumer, message_id) IN (
    SELECT c.consumer, c.message_id FROM consumer_inbox c
    WHERE c.processed_at < sqlc.arg(cutoff)::timestamptz
      AND NOT EXISTS (
        SELECT 1 FROM watermill_outbox o
        WHERE o.created_at >= sqlc.arg(cutoff)::timestamptz::timestamp
          AND o.payload ->> 'uuid' = c.message_id)
    ORDER BY c.processed_at
    LIMIT sqlc.arg(batch_size)
    FOR UPDATE OF c SKIP LOCKED
);

-- name: RetentionDeleteExecutions :execrows
-- Execution log rows written before cutoff. The log is evidence for the
-- audit, never consulted by a guard.
DELETE FROM executions
WHERE id IN (
    SELECT e.id FROM executions e
    WHERE e.created_at < sqlc.arg(cutoff)::timestamptz
    ORDER BY e.id
    LIMIT sqlc.arg(batch_size)
    FOR UPDATE SKIP LOCKED
);

-- name: RetentionDeleteOutbox :execrows
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
DELETE FROM watermill_outbox
WHERE (transaction_id, "offset") IN (
    SELECT o.transaction_id, o."offset"
    FROM (
        SELECT h.transaction_id, h."offset", h.created_at, h.uuid, h.payload FROM watermill_outbox h
        ORDER BY h.transaction_id, h."offset"
        LIMIT sqlc.arg(batch_size)
        FOR UPDATE SKIP LOCKED
    ) o
    JOIN watermill_offsets_outbox r
      ON r.consumer_group = 'outbox_relay.lane' || (abs(hashtext(coalesce(o.payload -> 'metadata' ->> 'order_id', o.uuid))::bigint) % 2) || 'of2'
    WHERE o.created_at < sqlc.arg(cutoff)::timestamptz::timestamp
      AND (o.transaction_id, o."offset") <= (r.last_processed_transaction_id, r.offset_acked)
);
