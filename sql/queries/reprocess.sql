-- name: ReprocessMessageAge :one
-- How long ago a message id first entered the outbox, in seconds (0 when it
-- is not there): the age that decides whether its inbox row may already have
-- been removed by the retention cleaner. The outbox stores local timestamps
-- (watermill's schema), so the age is computed by the server, in its time
-- zone, not by the client.
SELECT coalesce(extract(epoch FROM localtimestamp - min(created_at)), 0)::bigint AS age_seconds
FROM watermill_outbox
WHERE payload ->> 'uuid' = sqlc.arg(message_id)::text;
