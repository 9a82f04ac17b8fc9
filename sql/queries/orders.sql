-- name: OrderCreate :one
INSERT INTO orders (id, customer_id, affiliate_id, amount_cents, currency)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- name: OrderGet :one
SELECT * FROM orders WHERE id = $1;

-- name: OrderLockBatch :many
-- Locks the batch's orders in id order, the one order in which every
-- transaction that locks several orders takes them (OrderLockBatchForUpdate
-- too), so that two batches that overlap, or a batch and a single delivery,
-- cannot deadlock on them; and reads what the state check and the steps
-- after it need: the status and what the commission is computed from.
-- Whether a refund was asked is read after it (RefundRequestOrdersBatch).
-- An id with no row is an unknown order. FOR NO KEY UPDATE is the lock the
-- UPDATE below takes anyway: it does not block the foreign-key checks of
-- rows that reference the order.
--
-- Set forms (here each beside its per-message twin): the guard applied to a
-- set of distinct orders in one statement, for a batch of messages in one
-- transaction (internal/consumer/batch_steps.go), which dedupes the batch first.
-- A mistake has no set form: with a guard off the lab runs one message at a
-- time (internal/lab/switches).
SELECT o.id, o.status, o.affiliate_id, o.amount_cents
FROM orders o
WHERE o.id = ANY(sqlc.arg(order_ids)::uuid[])
ORDER BY o.id
FOR NO KEY UPDATE OF o;

-- name: OrderLockBatchForUpdate :exec
-- Locks the orders of a batch handled message by message in one
-- transaction (consumer.InOneTransaction), all of them, in id order, before
-- the first message runs: each message then locks its order again as on its
-- own, in whatever order the batch holds them, but only rows the batch
-- already holds. Without it the batch would lock them in message order and
-- deadlock with a batch that locks them in id order (OrderLockBatch). FOR
-- UPDATE is the strongest lock the handlers take on an order
-- (OrderMarkRefunded), so none of them waits for a stronger one later.
SELECT o.id
FROM orders o
WHERE o.id = ANY(sqlc.arg(order_ids)::uuid[])
ORDER BY o.id
FOR UPDATE OF o;

-- name: OrderMarkPaid :one
-- The state check. Under READ COMMITTED a concurrent second UPDATE waits for
-- the first, re-reads the row and finds status = 'paid': it matches no row.
UPDATE orders
SET status = 'paid', paid_at = now()
WHERE id = $1 AND status = 'pending'
RETURNING *;

-- name: OrderMarkPaidBatch :many
-- The state check, set-based: every pending order of the set moves to paid,
-- once. RETURNING gives back exactly the orders this statement moved: those
-- are applied; the others were already paid (already_applied) or refunded
-- (not_applicable). A concurrent batch waits on the row lock, re-checks
-- the WHERE clause on the committed row and matches nothing.
UPDATE orders
SET status = 'paid', paid_at = now()
WHERE id = ANY(sqlc.arg(order_ids)::uuid[]) AND status = 'pending'
RETURNING id;

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

-- name: OrderTransitionInsertBatch :exec
-- The transitions of the orders OrderMarkPaidBatch moved, one row each, in
-- one statement: order_ids[i] was moved by the message message_ids[i].
-- (Without the state check an order is moved by each of its messages, and
-- is in order_ids once per message.)
-- (Several unnest calls in one select list run in step, row i of each
-- together; the arrays have one length.)
INSERT INTO order_transitions (order_id, from_status, to_status, message_id)
SELECT unnest(sqlc.arg(order_ids)::uuid[]), 'pending', 'paid', unnest(sqlc.arg(message_ids)::text[]);

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
-- The state check of a refund: pending, paid or refund_failed -> refunded,
-- once. A second refund (a redelivery, a retry) waits for the first, then
-- finds the order refunded and matches no row. From refund_failed: the
-- provider refused our refund, and a person then refunded the order in its
-- dashboard (its payment.refunded, or orderpaid reconcile, says so).
-- from_status is what the order was.
WITH prev AS (SELECT p.id, p.status FROM orders p WHERE p.id = sqlc.arg(order_id)::uuid FOR UPDATE)
UPDATE orders o
SET status = 'refunded', refunded_at = now()
FROM prev
WHERE o.id = prev.id AND prev.status IN ('pending', 'paid', 'refund_failed')
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

-- name: OrderMarkRefundFailed :one
-- The state check of a refund the provider refused for good: paid ->
-- refund_failed, once. A second refusal (two deliveries that raced to the
-- gateway) waits for the first, re-reads the row, finds it refund_failed
-- and matches nothing. Only from paid: an order refunded meanwhile by
-- another path has its money back, and a pending one was never charged.
UPDATE orders
SET status = 'refund_failed'
WHERE id = $1 AND status = 'paid'
RETURNING *;
