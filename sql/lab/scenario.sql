-- Queries of the scenario runner (internal/lab/scenario), generated into
-- internal/lab/labqueries; the service itself never runs them.

-- name: ScenarioProviderCalls :one
-- How often the notification provider was called for these orders'
-- confirmations, replays included. The audit's notification_sent counts only real sends; the
-- difference is the calls an inbox would have saved.
SELECT count(*) FROM notification_log
WHERE order_id = ANY(sqlc.arg(order_ids)::uuid[]) AND template = 'order_confirmed';

-- name: ScenarioOutboxMessages :many
-- The messages written to the outbox for one order, oldest first: what an
-- operator would find to re-enqueue.
SELECT (payload ->> 'destination_topic')::text AS topic, (payload ->> 'uuid')::text AS message_id
FROM watermill_outbox
WHERE payload -> 'metadata' ->> 'order_id' = sqlc.arg(order_id)::uuid::text
ORDER BY "offset";
