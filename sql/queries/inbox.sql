-- name: WebhookInboxInsert :execrows
INSERT INTO webhook_inbox (event_id, event_type, order_id)
VALUES ($1, $2, $3)
ON CONFLICT (event_id) DO NOTHING;

-- name: ConsumerInboxExists :one
SELECT EXISTS (
    SELECT 1 FROM consumer_inbox WHERE consumer = $1 AND message_id = $2
);

-- name: ConsumerInboxSeenBatch :many
-- The inbox, for a batch: which of these messages the consumer handled
-- before. One look-up for the batch instead of one per message.
--
-- Set forms (here each beside its per-message twin): the guard applied to a
-- set of distinct keys in one statement, for a batch of messages in one
-- transaction (internal/consumer/batch.go), which dedupes the batch first.
SELECT message_id FROM consumer_inbox
WHERE consumer = sqlc.arg(consumer) AND message_id = ANY(sqlc.arg(message_ids)::text[]);

-- name: ConsumerInboxInsert :execrows
INSERT INTO consumer_inbox (consumer, message_id, order_id)
VALUES ($1, $2, $3)
ON CONFLICT (consumer, message_id) DO NOTHING;

-- name: ConsumerInboxInsertBatch :many
-- The inbox rows of a batch in one statement. DO NOTHING RETURNING returns
-- only the rows inserted: a message it does not return was recorded before
-- (already_applied). The batch holds each message id once.
INSERT INTO consumer_inbox (consumer, message_id, order_id)
SELECT sqlc.arg(consumer)::text, unnest(sqlc.arg(message_ids)::text[]), unnest(sqlc.arg(order_ids)::uuid[])
ON CONFLICT (consumer, message_id) DO NOTHING
RETURNING message_id;

-- name: NotificationLogInsert :exec
INSERT INTO notification_log (order_id, message_id, idempotency_key, provider_notification_id, replayed, template)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: NotificationLogInsertBatch :exec
-- The provider's answers of a batch, one row each, in one statement.
INSERT INTO notification_log (order_id, message_id, idempotency_key, provider_notification_id, replayed, template)
SELECT unnest(sqlc.arg(order_ids)::uuid[]), unnest(sqlc.arg(message_ids)::text[]), unnest(sqlc.arg(keys)::text[]),
       unnest(sqlc.arg(notification_ids)::text[]), unnest(sqlc.arg(replayed)::boolean[]), sqlc.arg(template)::text;
