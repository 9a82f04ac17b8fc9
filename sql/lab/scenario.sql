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

-- name: ScenarioEventsAccepted :one
-- The payment events the webhook accepted for these orders: each wrote one
-- order_paid message to the outbox, in the transaction of its webhook
-- inbox row (an operator's replay, orderpaid reprocess, is not counted).
-- One per distinct event the gateway sent, however often it delivered it.
SELECT count(*) FROM watermill_outbox
WHERE order_id = ANY(sqlc.arg(order_ids)::uuid[])
  AND payload ->> 'destination_topic' = 'order_paid'
  AND payload -> 'metadata' ->> 'replayed_by' IS NULL;

-- name: ScenarioRunsDone :one
-- The runs of handler for these orders that ended without an error: a run
-- that failed (an e-mail's claim held by a run that died, a provider that
-- said "not now") is in the execution log too, and is retried.
SELECT count(*) FROM executions
WHERE order_id = ANY(sqlc.arg(order_ids)::uuid[]) AND handler = sqlc.arg(handler) AND error IS NULL;
