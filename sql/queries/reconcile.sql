-- name: ReconcileOrders :many
-- The service's record of every order created in the window, one row each,
-- for orderpaid reconcile (internal/ops/reconcile) to hold against the
-- providers'. Every time is the database's: settled_long_ago says the order
-- has been quiet for the grace period, so what is missing is missing, not in
-- flight; lease_expired that an attempt is charging past its lease;
-- payment_accepted that a payment.succeeded of the order is in the webhook
-- inbox (the flow has it: a pending order is only late).
SELECT
    o.id, o.status, o.amount_cents,
    (coalesce(o.paid_at, o.refunded_at, o.created_at)
        < now() - sqlc.arg(grace_ms)::bigint * interval '1 millisecond')::boolean AS settled_long_ago,
    ch.state AS charge_state, ch.attempt AS charge_attempt, ch.charge_id,
    coalesce(ch.state = 'charging' AND ch.locked_until < now(), false)::boolean AS lease_expired,
    EXISTS (SELECT 1 FROM notification_log n
             WHERE n.order_id = o.id AND n.template = 'order_confirmed')::boolean AS notified,
    EXISTS (SELECT 1 FROM webhook_inbox w
             WHERE w.order_id = o.id AND w.event_type = 'payment.succeeded')::boolean AS payment_accepted,
    EXISTS (SELECT 1 FROM consumer_inbox i
             WHERE i.order_id = o.id AND i.consumer = 'order_confirmed')::boolean AS confirmation_delivered
FROM orders o
LEFT JOIN order_charges ch ON ch.order_id = o.id
WHERE sqlc.arg(window_ms)::bigint = 0
   OR o.created_at >= now() - sqlc.arg(window_ms)::bigint * interval '1 millisecond'
ORDER BY o.created_at, o.id;

-- name: ReconcileActionInsert :execrows
-- Claims one action of reconcile: zero rows, another run (or an earlier
-- one) took it, and this run settles nothing.
INSERT INTO reconcile_actions (action, key, order_id, detail)
VALUES ($1, $2, $3, $4)
ON CONFLICT (action, key) DO NOTHING;

-- name: ReconcileChargeRelease :execrows
-- Gives back an attempt left charging past its lease whose key the gateway
-- does not know: the next request takes it over under the same key
-- (internal/payment/charge.go). Only while it is still charging past its
-- lease: a request that took it over since keeps it.
UPDATE order_charges
SET state = 'released', locked_until = NULL, updated_at = now()
WHERE order_id = $1 AND attempt = $2 AND state = 'charging' AND locked_until < now();

-- name: ReconcileActionsOfOrder :many
-- What reconcile settled for one order, for the audit.
SELECT action FROM reconcile_actions WHERE order_id = $1 ORDER BY action;

-- name: ReconcileHandedOff :many
-- How far the worker got with what a run handed it, for the orders the run
-- settled: the order's status (order_paid moves it out of pending,
-- order_refunded to refunded) and whether its order_confirmed was delivered
-- (the consumer inbox's row, or the provider's answer in notification_log).
-- A settlement the worker has not applied yet is waiting, not done.
SELECT
    o.id, o.status,
    EXISTS (SELECT 1 FROM notification_log n
             WHERE n.order_id = o.id AND n.template = 'order_confirmed')::boolean AS notified,
    EXISTS (SELECT 1 FROM consumer_inbox i
             WHERE i.order_id = o.id AND i.consumer = 'order_confirmed')::boolean AS confirmation_delivered
FROM orders o
WHERE o.id = ANY(sqlc.arg(ids)::uuid[]);
