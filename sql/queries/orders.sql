-- name: OrderCreate :one
INSERT INTO orders (id, customer_id, affiliate_id, amount_cents, currency)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- name: OrderGet :one
SELECT * FROM orders WHERE id = $1;

-- name: OrderMarkPaid :one
-- The state check. Under READ COMMITTED a concurrent second UPDATE waits for
-- the first, re-reads the row and finds status = 'paid': it matches no row.
UPDATE orders
SET status = 'paid', paid_at = now()
WHERE id = $1 AND status = 'pending'
RETURNING *;

-- name: OrderMarkPaidUnconditional :one
-- The mistake the state check prevents (scenario "--without state-check"):
-- every execution "transitions" the order again, a refunded one too (it
-- comes back to life: paid, no longer refunded).
UPDATE orders
SET status = 'paid', paid_at = coalesce(paid_at, now()), refunded_at = NULL
WHERE id = $1
RETURNING *;

-- name: OrderTransitionInsert :exec
INSERT INTO order_transitions (order_id, from_status, to_status, message_id)
VALUES ($1, $2, $3, $4);

-- name: OrderListPaidInRange :many
-- One page of the backfill, keyset-paginated on (paid_at, id).
SELECT id, paid_at, amount_cents
FROM orders
WHERE status = 'paid'
  AND paid_at >= sqlc.arg(paid_from)::timestamptz AND paid_at < sqlc.arg(paid_to)::timestamptz
  AND (paid_at, id) > (sqlc.arg(after_paid_at)::timestamptz, sqlc.arg(after_id)::uuid)
ORDER BY paid_at, id
LIMIT sqlc.arg(page_size);

-- name: OrderCountPaidInRange :one
SELECT count(*) FROM orders
WHERE status = 'paid' AND paid_at >= sqlc.arg(paid_from)::timestamptz AND paid_at < sqlc.arg(paid_to)::timestamptz;

-- name: OrderMarkRefunded :one
-- The state check of a refund: pending or paid -> refunded, once. A second
-- refund (a redelivery, a retry) waits for the first, then finds the order
-- refunded and matches no row. from_status is what the order was.
WITH prev AS (SELECT p.id, p.status FROM orders p WHERE p.id = sqlc.arg(order_id)::uuid FOR UPDATE)
UPDATE orders o
SET status = 'refunded', refunded_at = now()
FROM prev
WHERE o.id = prev.id AND prev.status IN ('pending', 'paid')
RETURNING prev.status AS from_status;

-- name: OrderMarkRefundedUnconditional :one
-- The mistake behind "--without state-check" for refunds: no status in the
-- WHERE clause, so every execution "refunds" the order again.
WITH prev AS (SELECT p.id, p.status FROM orders p WHERE p.id = sqlc.arg(order_id)::uuid FOR UPDATE)
UPDATE orders o
SET status = 'refunded', refunded_at = now()
FROM prev
WHERE o.id = prev.id
RETURNING prev.status AS from_status;
