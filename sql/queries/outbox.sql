-- name: OutboxFindByMessageID :one
-- The newest outbox envelope carrying message id $1 (the id of the message
-- inside the envelope, which is what consumers and the audit see).
SELECT payload::text AS envelope, created_at
FROM watermill_outbox
WHERE payload ->> 'uuid' = sqlc.arg(message_id)::text
ORDER BY "offset" DESC
LIMIT 1;

-- name: OutboxBacklog :one
-- Outbox rows not yet relayed: those after the relay group's position.
-- The relay reads in (transaction_id, offset) order, not offset order (a
-- transaction that took its offset earlier may commit later), so the
-- position is the pair: comparing offsets alone would count a row relayed
-- out of offset order as a backlog forever.
SELECT count(*)
FROM watermill_outbox o
LEFT JOIN watermill_offsets_outbox r ON r.consumer_group = 'outbox_relay'
WHERE r.consumer_group IS NULL
   OR o.transaction_id > r.last_processed_transaction_id
   OR (o.transaction_id = r.last_processed_transaction_id AND o."offset" > r.offset_acked);
