-- name: RefundRequestInsert :execrows
-- The order's one refund intent (migration 00012). Zero rows: the order
-- already has one, whoever asked first.
INSERT INTO refund_requests (order_id, reason, idempotency_key, fingerprint, response_body)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (order_id) DO NOTHING;

-- name: RefundRequestGet :one
SELECT * FROM refund_requests WHERE order_id = $1;

-- name: OrderLockForCommission :one
-- Serialises the commission with the order's refund: it takes the order's
-- row lock, which MarkRefunded's UPDATE takes too. Whichever comes second
-- sees what the first committed: a refund that came first leaves a status
-- other than paid, or a refund intent, and no commission is credited; a
-- commission that came first is there for the refund to reverse.
SELECT o.status,
       EXISTS (SELECT 1 FROM refund_requests r WHERE r.order_id = o.id) AS refund_requested
FROM orders o
WHERE o.id = $1
FOR UPDATE OF o;

-- name: OrderChargeID :one
-- The gateway's id of the order's charge, from the service's own record of
-- the gateway's answers: what a refund names.
SELECT c.charge_id::text FROM gateway_charge_calls c
WHERE c.order_id = $1 AND c.charge_id IS NOT NULL
ORDER BY c.id
LIMIT 1;

-- name: GatewayRefundCallInsert :exec
-- Records one answer of the gateway to a refund call.
INSERT INTO gateway_refund_calls (order_id, gateway_key, status, refund_id, replayed)
VALUES ($1, $2, $3, $4, $5);

-- name: OrderGetForUpdate :one
-- The order, locked until the transaction ends: a refund request is decided
-- on the order as it is, not as it was a moment ago.
SELECT * FROM orders WHERE id = $1 FOR UPDATE;
