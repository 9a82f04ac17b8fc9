-- name: OutboxFindByMessageID :one
-- The newest outbox envelope carrying message id $1 (the id of the message
-- inside the envelope, which is what consumers and the audit see).
SELECT payload::text AS envelope, created_at
FROM watermill_outbox
WHERE payload ->> 'uuid' = sqlc.arg(message_id)::text
ORDER BY "offset" DESC
LIMIT 1;

-- name: OutboxBacklog :one
-- Outbox rows not yet relayed (above the relay group's acked offset).
SELECT count(*)
FROM watermill_outbox o
WHERE o."offset" > coalesce(
    (SELECT offset_acked FROM watermill_offsets_outbox WHERE consumer_group = 'outbox_relay'), 0);
