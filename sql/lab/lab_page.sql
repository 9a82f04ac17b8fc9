-- What the lab page (GET /lab, internal/lab/labpage) reads, and nothing else
-- does: the recent orders and, for one order, its timeline. The effects next
-- to each order are not here: the page reads the audit (AuditOrder, GET
-- /orders/{id}/audit), the one definition of what is counted. The lab page
-- is served in a dev run only; some of these read a table without an index
-- by order id (webhook_inbox, poison_messages), which is fine for a workshop
-- database.

-- name: LabRecentOrders :many
-- The most recent orders first.
SELECT id, status, customer_id, affiliate_id, amount_cents, currency, created_at, paid_at
FROM orders
ORDER BY created_at DESC, id
LIMIT sqlc.arg(max_orders);

-- name: LabOrderWebhooks :many
-- The webhook events accepted for the order (the inbox keeps one row per
-- provider event id: a redelivery of the same event adds none).
SELECT event_id, event_type, received_at
FROM webhook_inbox
WHERE order_id = sqlc.arg(order_id)::uuid
ORDER BY received_at, event_id;

-- name: LabOrderExecutions :many
-- Every handler run for the order, with each guard's answer (outcomes, a
-- JSON array of effect.Result) and the error of a failed run.
SELECT id, handler, message_id, outcomes, error, created_at
FROM executions
WHERE order_id = sqlc.arg(order_id)::uuid
ORDER BY id
LIMIT 500;

-- name: LabOrderGatewayCalls :many
-- The service's record of its calls to the payment gateway for the order.
SELECT id, gateway_key, status, charge_id, replayed, created_at
FROM gateway_charge_calls
WHERE order_id = sqlc.arg(order_id)::uuid
ORDER BY id;

-- name: LabOrderRefundCalls :many
-- The service's record of its refund calls to the payment gateway.
SELECT id, gateway_key, status, refund_id, replayed, created_at
FROM gateway_refund_calls
WHERE order_id = sqlc.arg(order_id)::uuid
ORDER BY id;

-- name: LabOrderNotifications :many
-- The service's record of its calls to the notification provider, with the
-- template sent (order_confirmed, order_refunded).
SELECT id, message_id, idempotency_key, provider_notification_id, template, replayed, created_at
FROM notification_log
WHERE order_id = sqlc.arg(order_id)::uuid
ORDER BY id;

-- name: LabOrderPoison :many
-- The order's messages in the poison queue, replayed or not.
SELECT id, topic, handler, message_id, reason, created_at, reprocessed_at
FROM poison_messages
WHERE metadata ->> 'order_id' = sqlc.arg(order_id)::text
ORDER BY id;

-- name: LabPoisonPending :many
-- The poison queue's pending messages, oldest first, with their order.
SELECT id, topic, handler, message_id, coalesce(metadata ->> 'order_id', '')::text AS order_id, reason, created_at
FROM poison_messages
WHERE reprocessed_at IS NULL
ORDER BY id
LIMIT sqlc.arg(max_messages);

-- name: LabOrderChargeID :one
-- The gateway's id of the order's first confirmed charge: what the fake
-- gateway's redeliver endpoint is called with.
SELECT charge_id::text
FROM gateway_charge_calls
WHERE order_id = sqlc.arg(order_id)::uuid AND charge_id IS NOT NULL
ORDER BY id
LIMIT 1;
