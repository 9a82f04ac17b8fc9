-- name: OutboxFindByMessageID :one
-- The newest outbox envelope carrying message id $1 (the id of the message
-- inside the envelope, which is what consumers and the audit see), through
-- the message id column and its index (migration 00008).
SELECT payload::text AS envelope, created_at
FROM watermill_outbox
WHERE message_id = sqlc.arg(message_id)::text
ORDER BY "offset" DESC
LIMIT 1;

-- name: OutboxBacklog :one
-- Outbox rows not yet relayed: those after the position of the relay lane
-- that reads them. The relay reads the outbox in 2 lanes by order id
-- (outbox.RelayLanes, broker.LaneKeyEnvelope; a test checks the two stay
-- in step), each as consumer group "outbox_relay.lane<k>of2", and each lane in
-- (transaction_id, offset) order, not offset order (a transaction that took
-- its offset earlier may commit later), so a position is the pair: comparing
-- offsets alone would count a row relayed out of offset order as a backlog
-- forever. A lane with no position yet (the relay never ran) starts at
-- (0, 0): all of its rows wait.
--
-- One count per lane, each a range of the relay's lane index (lane, then
-- position; broker.PostgresSchema creates it), so the gauge reads only the
-- rows that wait: with 1,000,000 relayed rows, 20 ms instead of the 2.2 s of
-- a join of every row to its lane's position (BenchmarkOutboxBacklog).
SELECT (
    (SELECT count(*) FROM watermill_outbox o
     WHERE abs(hashtext(coalesce(o.payload -> 'metadata' ->> 'order_id', o.uuid))::bigint) % 2 = 0
       AND (o.transaction_id, o."offset") > (
           coalesce((SELECT r.last_processed_transaction_id FROM watermill_offsets_outbox r WHERE r.consumer_group = 'outbox_relay.lane0of2'), '0'::xid8),
           coalesce((SELECT r.offset_acked FROM watermill_offsets_outbox r WHERE r.consumer_group = 'outbox_relay.lane0of2'), 0)))
  + (SELECT count(*) FROM watermill_outbox o
     WHERE abs(hashtext(coalesce(o.payload -> 'metadata' ->> 'order_id', o.uuid))::bigint) % 2 = 1
       AND (o.transaction_id, o."offset") > (
           coalesce((SELECT r.last_processed_transaction_id FROM watermill_offsets_outbox r WHERE r.consumer_group = 'outbox_relay.lane1of2'), '0'::xid8),
           coalesce((SELECT r.offset_acked FROM watermill_offsets_outbox r WHERE r.consumer_group = 'outbox_relay.lane1of2'), 0)))
)::bigint AS backlog;

-- name: OutboxRowsAheadOfTheRelay :one
-- How many of the outbox rows named by their keys (transaction ids and
-- offsets, in text, pair by pair) are still in the outbox and after the
-- position of every relay group: rows the polling relay has yet to publish.
-- outbox.TidySlots counts the rows the logical relay's slot holds with it
-- before it drops the slot. After every group's position, not only the
-- row's lane's: a count that comes short refuses a drop, and never loses a
-- row.
SELECT count(*)::bigint AS ahead
FROM (SELECT unnest(sqlc.arg(transaction_ids)::text[])::xid8 AS transaction_id,
             unnest(sqlc.arg(offsets)::text[])::bigint AS "offset") k
JOIN watermill_outbox o ON o.transaction_id = k.transaction_id AND o."offset" = k."offset"
WHERE NOT EXISTS (
    SELECT 1 FROM watermill_offsets_outbox r
    WHERE starts_with(r.consumer_group, 'outbox_relay')
      AND (o.transaction_id, o."offset") <= (r.last_processed_transaction_id, coalesce(r.offset_acked, 0)));

-- name: OutboxRelayMovePastTheSlot :many
-- The switch from the logical relay back to polling (outbox.SwitchBack):
-- moves each relay lane's position forward to the last row of the lane that
-- the slot published, so the polling relay starts where the slot stopped
-- instead of publishing again every row retention kept.
--
-- The slot published the rows of every transaction committed before its
-- confirmed position; what it holds unconfirmed (the keys given, from a
-- peek) it did not, nor the rows of transactions still open, which commit
-- later with a transaction id at or above the horizon (the oldest
-- transaction open in this database, outbox.outboxHorizon, read before the
-- peek). Transaction ids are not in commit order, so a lane's
-- new position is its last row below the horizon and before the lane's
-- first held row: every row at or before it was published, and no row can
-- still come at or before it. A row after it the slot published too is
-- published again (at least once). A position is never moved back: a lane
-- already past the target is left alone, and so is one a polling relay
-- moved past it meanwhile (the WHERE of the upsert reads the newest
-- version). One row per lane moved, with how many rows it skipped.
WITH held AS (
    SELECT unnest(sqlc.arg(transaction_ids)::text[])::xid8 AS transaction_id,
           unnest(sqlc.arg(offsets)::text[])::bigint AS "offset"
), lanes AS (
    SELECT k.lane, ('outbox_relay.lane' || k.lane || 'of2')::text AS consumer_group,
           coalesce(p.last_processed_transaction_id, '0'::xid8) AS at_transaction_id,
           coalesce(p.offset_acked, 0)::bigint AS at_offset
    FROM generate_series(0, 1) AS k(lane)
    LEFT JOIN watermill_offsets_outbox p ON p.consumer_group = 'outbox_relay.lane' || k.lane || 'of2'
), targets AS (
    SELECT l.lane, l.consumer_group, l.at_transaction_id, l.at_offset, t.transaction_id, t."offset"
    FROM lanes l
    LEFT JOIN LATERAL (
        SELECT o.transaction_id, o."offset" FROM held h
        JOIN watermill_outbox o ON o.transaction_id = h.transaction_id AND o."offset" = h."offset"
        WHERE abs(hashtext(coalesce(o.payload -> 'metadata' ->> 'order_id', o.uuid))::bigint) % 2 = l.lane
        ORDER BY o.transaction_id, o."offset"
        LIMIT 1) f ON true
    JOIN LATERAL (
        SELECT o.transaction_id, o."offset" FROM watermill_outbox o
        WHERE abs(hashtext(coalesce(o.payload -> 'metadata' ->> 'order_id', o.uuid))::bigint) % 2 = l.lane
          AND o.transaction_id < sqlc.arg(horizon)::text::xid8
          AND (f.transaction_id IS NULL OR (o.transaction_id, o."offset") < (f.transaction_id, f."offset"))
        ORDER BY o.transaction_id DESC, o."offset" DESC
        LIMIT 1) t ON true
    WHERE (t.transaction_id, t."offset") > (l.at_transaction_id, l.at_offset)
), moved AS (
    INSERT INTO watermill_offsets_outbox AS p (consumer_group, offset_acked, last_processed_transaction_id)
    SELECT consumer_group, "offset", transaction_id FROM targets
    ON CONFLICT (consumer_group) DO UPDATE
    SET offset_acked = excluded.offset_acked, last_processed_transaction_id = excluded.last_processed_transaction_id
    WHERE (p.last_processed_transaction_id, coalesce(p.offset_acked, 0)) < (excluded.last_processed_transaction_id, excluded.offset_acked)
    RETURNING p.consumer_group
)
SELECT t.consumer_group, t.transaction_id::text AS position_transaction_id, t."offset" AS position_offset,
       (SELECT count(*) FROM watermill_outbox o
        WHERE abs(hashtext(coalesce(o.payload -> 'metadata' ->> 'order_id', o.uuid))::bigint) % 2 = t.lane
          AND (o.transaction_id, o."offset") > (t.at_transaction_id, t.at_offset)
          AND (o.transaction_id, o."offset") <= (t.transaction_id, t."offset"))::bigint AS skipped
FROM targets t
JOIN moved m ON m.consumer_group = t.consumer_group
ORDER BY t.consumer_group;
