-- name: OutboxFindByMessageID :one
-- The newest outbox envelope carrying message id $1 (the id of the message
-- inside the envelope, which is what consumers and the audit see).
SELECT payload::text AS envelope, created_at
FROM watermill_outbox
WHERE payload ->> 'uuid' = sqlc.arg(message_id)::text
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
-- forever.
SELECT count(*)
FROM watermill_outbox o
LEFT JOIN watermill_offsets_outbox r
  ON r.consumer_group = 'outbox_relay.lane' || (abs(hashtext(coalesce(o.payload -> 'metadata' ->> 'order_id', o.uuid))::bigint) % 2) || 'of2'
WHERE r.consumer_group IS NULL
   OR (o.transaction_id, o."offset") > (r.last_processed_transaction_id, r.offset_acked);
