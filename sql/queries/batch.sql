-- The order_paid guards in their set-based form, for a batch of messages in
-- one transaction (internal/consumer/batch.go). Each statement is the
-- per-message guard applied to a set of distinct orders: the caller
-- dedupes the batch first, so no statement ever holds one order twice.
-- The ...Unguarded statements are the mistakes the guards prevent, in the
-- same set-based form, for the lab's levers (internal/consumer/batch_levers.go).

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

-- name: OrderMarkPaidBatchUnguarded :many
-- The mistake the state check prevents, set-based (batch mode with
-- "--without state-check"): OrderMarkPaidBatch without its WHERE status =
-- 'pending'. Every order of the set "transitions" again, however often it
-- was paid before, and a refunded one comes back to life (paid, no longer
-- refunded), as OrderMarkPaidUnconditional does for one order. RETURNING
-- gives back every order that exists.
UPDATE orders
SET status = 'paid', paid_at = coalesce(paid_at, now()), refunded_at = NULL
WHERE id = ANY(sqlc.arg(order_ids)::uuid[])
RETURNING id;

-- name: OrderTransitionInsertBatch :exec
-- The transitions of the orders OrderMarkPaidBatch moved, one row each, in
-- one statement: order_ids[i] was moved by the message message_ids[i].
-- (Without the state check an order is moved by each of its messages, and
-- is in order_ids once per message.)
-- (Several unnest calls in one select list run in step, row i of each
-- together; the arrays have one length.)
INSERT INTO order_transitions (order_id, from_status, to_status, message_id)
SELECT unnest(sqlc.arg(order_ids)::uuid[]), 'pending', 'paid', unnest(sqlc.arg(message_ids)::text[]);

-- name: StockLockForOrders :many
-- Locks every SKU the given orders hold items of, in SKU order, before
-- any of them is reserved. One order's reservation takes its SKUs in SKU
-- order; a batch reserves several orders one after another, and without
-- this its SKU locks would follow the orders (sku-b of the first order,
-- then sku-a of the second) and could deadlock with a delivery or a batch
-- going the other way. FOR NO KEY UPDATE is what the guarded decrement
-- takes.
SELECT s.sku
FROM stock s
WHERE s.sku IN (SELECT i.sku FROM order_items i WHERE i.order_id = ANY(sqlc.arg(order_ids)::uuid[]))
ORDER BY s.sku
FOR NO KEY UPDATE OF s;

-- name: StockLockForRelease :exec
-- Locks, in SKU order, every SKU the given orders' live reservations hold:
-- what a refund of them gives back (stock.Release). Release takes one
-- order's SKUs in SKU order; a batch refunding several orders one after
-- another (consumer.InOneTransaction) would take them order after order,
-- against the SKU order every other transaction takes them in. Taken
-- after the orders' row locks (OrderLockBatchForUpdate): while they are
-- held no reservation of those orders appears or goes.
SELECT s.sku
FROM stock s
WHERE s.sku IN (SELECT r.sku FROM stock_reservations r
                WHERE r.order_id = ANY(sqlc.arg(order_ids)::uuid[]) AND r.released_at IS NULL)
ORDER BY s.sku
FOR NO KEY UPDATE OF s;

-- name: StockTakeUnguardedBatch :exec
-- The mistake the reservation prevents, set-based (batch mode with
-- "--without stock-reservation"): the naive counter of StockTakeUnguarded
-- for every delivery of the set at once. order_ids holds an order once per
-- delivery, so each SKU loses the items of every delivery; no reservation
-- row is met. Clamped at 0 as StockTakeUnguarded is: taking q1 and then q2,
-- each clamped at 0, leaves what taking q1 + q2 once, clamped, leaves.
UPDATE stock s
SET available = greatest(s.available - t.quantity, 0), updated_at = now()
FROM (SELECT i.sku, sum(i.quantity)::integer AS quantity
      FROM unnest(sqlc.arg(order_ids)::uuid[]) AS d(order_id)
      JOIN order_items i ON i.order_id = d.order_id
      GROUP BY i.sku) t
WHERE s.sku = t.sku;

-- name: StockMovementReserveBatch :many
-- The record of each naive take of StockTakeUnguardedBatch: one 'reserve'
-- movement per delivery (order_ids[i], message_ids[i]) of an order that has
-- items, as stock.ReserveUnguarded writes one per message. RETURNING gives
-- back the order of every row written: a delivery of an order it does not
-- return took nothing (the order has no items).
INSERT INTO stock_movements (order_id, kind, message_id)
SELECT d.order_id, 'reserve', d.message_id
FROM (SELECT unnest(sqlc.arg(order_ids)::uuid[]) AS order_id, unnest(sqlc.arg(message_ids)::text[]) AS message_id) d
WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = d.order_id)
RETURNING order_id;

-- name: OrderLockForCommissionBatch :many
-- OrderLockForCommission for a set: the orders' row locks, in id order,
-- with each order's status. A refund (MarkRefunded) takes the same lock, so
-- it and the commission of the same order never interleave. Whether a
-- refund was asked is read after it, in its own statement
-- (RefundRequestOrdersBatch), as RefundRequestExists is.
SELECT o.id, o.status
FROM orders o
WHERE o.id = ANY(sqlc.arg(order_ids)::uuid[])
ORDER BY o.id
FOR UPDATE OF o;

-- name: RefundRequestOrdersBatch :many
-- RefundRequestExists for a set: which of the orders have a refund intent.
-- Run after the orders' row locks are taken, in its own statement, so that
-- it sees an intent that committed while a lock was awaited.
SELECT r.order_id FROM refund_requests r
WHERE r.order_id = ANY(sqlc.arg(order_ids)::uuid[]);

-- name: LedgerCommissionInsertBatch :many
-- The unique ledger key, set-based: one commission row per order under its
-- business key, ON CONFLICT DO NOTHING. RETURNING gives back only the keys
-- this statement inserted: those orders are applied, every other order of
-- the set was credited before (already_applied). Under READ COMMITTED the
-- conflict never raises, even against a concurrent batch. The caller holds
-- each key once. (With "--without ledger-key" the keys are the deliveries'
-- instead, "delivery:<message id>", as ledger.ReleaseCommissionUnguarded
-- writes them: one row per message, several for one order.)
INSERT INTO ledger_entries (entry_key, order_id, entry_type, affiliate_id, amount_cents, message_id)
SELECT unnest(sqlc.arg(entry_keys)::text[]), unnest(sqlc.arg(order_ids)::uuid[]), 'affiliate_commission',
       unnest(sqlc.arg(affiliate_ids)::text[]), unnest(sqlc.arg(amount_cents)::bigint[]), unnest(sqlc.arg(message_ids)::text[])
ON CONFLICT (entry_key) DO NOTHING
RETURNING entry_key;

-- name: ConsumerInboxSeenBatch :many
-- The inbox, for a batch: which of these messages the consumer handled
-- before. One look-up for the batch instead of one per message.
SELECT message_id FROM consumer_inbox
WHERE consumer = sqlc.arg(consumer) AND message_id = ANY(sqlc.arg(message_ids)::text[]);

-- name: NotificationLogInsertBatch :exec
-- The provider's answers of a batch, one row each, in one statement.
INSERT INTO notification_log (order_id, message_id, idempotency_key, provider_notification_id, replayed, template)
SELECT unnest(sqlc.arg(order_ids)::uuid[]), unnest(sqlc.arg(message_ids)::text[]), unnest(sqlc.arg(keys)::text[]),
       unnest(sqlc.arg(notification_ids)::text[]), unnest(sqlc.arg(replayed)::boolean[]), sqlc.arg(template)::text;

-- name: ConsumerInboxInsertBatch :many
-- The inbox rows of a batch in one statement. DO NOTHING RETURNING returns
-- only the rows inserted: a message it does not return was recorded before
-- (already_applied). The batch holds each message id once.
INSERT INTO consumer_inbox (consumer, message_id, order_id)
SELECT sqlc.arg(consumer)::text, unnest(sqlc.arg(message_ids)::text[]), unnest(sqlc.arg(order_ids)::uuid[])
ON CONFLICT (consumer, message_id) DO NOTHING
RETURNING message_id;
