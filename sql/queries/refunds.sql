-- name: RefundRequestInsert :execrows
-- The order's one refund intent (migration 00012). Zero rows: the order
-- already has one, whoever asked first.
INSERT INTO refund_requests (order_id, reason, idempotency_key, fingerprint, response_body)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (order_id) DO NOTHING;

-- name: RefundRequestGet :one
SELECT * FROM refund_requests WHERE order_id = $1;

-- name: RefundRequestExists :one
-- Whether a refund of the order was asked. Read in its own statement after
-- the order's row lock (OrderLockForCommission, ledger.sql): under READ COMMITTED each
-- statement takes a fresh snapshot, so this one sees a refund intent that
-- committed while the lock was awaited. An EXISTS in the locking statement
-- itself would not: it reads the snapshot that statement took before it
-- waited.
SELECT EXISTS (SELECT 1 FROM refund_requests r WHERE r.order_id = $1);

-- name: RefundRequestOrdersBatch :many
-- RefundRequestExists for a set: which of the orders have a refund intent.
-- Run after the orders' row locks are taken, in its own statement, so that
-- it sees an intent that committed while a lock was awaited.
SELECT r.order_id FROM refund_requests r
WHERE r.order_id = ANY(sqlc.arg(order_ids)::uuid[]);

-- name: OrderChargeID :one
-- The gateway's id of the order's charge: what a refund names. First the
-- order's payment intent, which the api's answer or the provider's signed
-- event recorded, whichever came first (so a charge whose answer died with the
-- api is still known); then the service's record of the gateway's answers
-- (gateway_charge_calls), where a charge made without the per-order claim is.
SELECT charge_id::text FROM (
    SELECT ch.charge_id, 0 AS rank, 0::bigint AS id FROM order_charges ch
    WHERE ch.order_id = $1 AND ch.charge_id IS NOT NULL
    UNION ALL
    SELECT c.charge_id, 1, c.id FROM gateway_charge_calls c
    WHERE c.order_id = $1 AND c.charge_id IS NOT NULL
) known
ORDER BY rank, id
LIMIT 1;

-- name: GatewayRefundCallInsert :exec
-- Records one answer of the gateway to a refund call; detail is the body of
-- a refusal for good (migration 00015), NULL otherwise.
INSERT INTO gateway_refund_calls (order_id, gateway_key, status, refund_id, replayed, detail)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: GatewayRefundCallLast :one
-- The gateway's last answer to a refund of the order: for a refund_failed
-- order, the refusal that ended it there.
SELECT status, detail FROM gateway_refund_calls
WHERE order_id = $1
ORDER BY id DESC
LIMIT 1;

-- name: OrderGetForUpdate :one
-- The order, locked until the transaction ends: a refund request is decided
-- on the order as it is, not as it was a moment ago.
SELECT * FROM orders WHERE id = $1 FOR UPDATE;
