-- name: WebhookInboxInsert :execrows
INSERT INTO webhook_inbox (event_id, event_type, order_id)
VALUES ($1, $2, $3)
ON CONFLICT (event_id) DO NOTHING;

-- name: ConsumerInboxExists :one
SELECT EXISTS (
    SELECT 1 FROM consumer_inbox WHERE consumer = $1 AND message_id = $2
);

-- name: ConsumerInboxInsert :execrows
INSERT INTO consumer_inbox (consumer, message_id, order_id)
VALUES ($1, $2, $3)
ON CONFLICT (consumer, message_id) DO NOTHING;

-- name: NotificationLogInsert :exec
INSERT INTO notification_log (order_id, message_id, idempotency_key, provider_notification_id, replayed, template)
VALUES ($1, $2, $3, $4, $5, $6);
