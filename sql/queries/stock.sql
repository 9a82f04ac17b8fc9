-- name: StockSet :one
-- Sets a SKU's stock to an absolute value, creating the SKU if needed: a set,
-- never an increment, so sending it twice changes nothing the second time.
INSERT INTO stock (sku, available) VALUES ($1, $2)
ON CONFLICT (sku) DO UPDATE SET available = EXCLUDED.available, updated_at = now()
RETURNING sku, available;

-- name: StockGet :one
-- A SKU's stock with the units its live reservations hold.
SELECT s.sku, s.available,
       coalesce((SELECT sum(r.quantity) FROM stock_reservations r
                  WHERE r.sku = s.sku AND r.released_at IS NULL), 0)::bigint AS reserved
FROM stock s WHERE s.sku = $1;

-- name: StockKnownSKUs :many
-- Which of the given SKUs exist.
SELECT sku FROM stock WHERE sku = ANY(sqlc.arg(skus)::text[]);

-- name: OrderItemInsert :exec
INSERT INTO order_items (order_id, sku, quantity) VALUES ($1, $2, $3);

-- name: OrderItems :many
-- An order's items in SKU order: the order every transaction locks SKUs in,
-- so two multi-item orders cannot deadlock.
SELECT sku, quantity FROM order_items WHERE order_id = $1 ORDER BY sku;

-- name: StockLockForOrders :many
-- Locks every SKU the given orders hold items of, in SKU order, before
-- any of them is reserved. One order's reservation takes its SKUs in SKU
-- order; a batch reserves several orders one after another, and without
-- this its SKU locks would follow the orders (sku-b of the first order,
-- then sku-a of the second) and could deadlock with a delivery or a batch
-- going the other way. FOR NO KEY UPDATE is what the guarded decrement
-- takes.
--
-- Set forms (here each beside its per-message twin): the guard applied to a
-- set of distinct orders in one statement, for a batch of messages in one
-- transaction (internal/consumer/batch_steps.go), which dedupes the batch first.
-- A mistake has no set form: with a guard off the lab runs one message at a
-- time (internal/lab/switches).
SELECT s.sku
FROM stock s
WHERE s.sku IN (SELECT i.sku FROM order_items i WHERE i.order_id = ANY(sqlc.arg(order_ids)::uuid[]))
ORDER BY s.sku
FOR NO KEY UPDATE OF s;

-- name: StockReservationInsert :execrows
-- The guard: one reservation per (order, SKU). Zero rows: already reserved.
INSERT INTO stock_reservations (order_id, sku, quantity) VALUES ($1, $2, $3)
ON CONFLICT (order_id, sku) DO NOTHING;

-- name: StockTake :execrows
-- The guarded decrement: only while enough is left. Under READ COMMITTED a
-- concurrent decrement of the same SKU waits, then this WHERE is checked again
-- against the new row: two orders racing for the last unit never both get it.
UPDATE stock SET available = available - sqlc.arg(quantity)::integer, updated_at = now()
WHERE sku = sqlc.arg(sku) AND available >= sqlc.arg(quantity)::integer;

-- name: StockTakeUnguarded :execrows
-- The naive counter, the mistake behind "--without stock-reservation": it
-- runs once per delivery. (It still stops at 0: the table's CHECK refuses a
-- negative count, so the naive version undercounts rather than goes below 0.)
UPDATE stock SET available = greatest(available - sqlc.arg(quantity)::integer, 0), updated_at = now()
WHERE sku = sqlc.arg(sku);

-- name: StockMovementInsert :exec
INSERT INTO stock_movements (order_id, kind, message_id) VALUES ($1, $2, $3);

-- name: StockReservationRelease :many
-- The guard of a release: marks the order's live reservations released,
-- once. A second release finds none (released_at is set) and returns nothing.
UPDATE stock_reservations SET released_at = now()
WHERE order_id = $1 AND released_at IS NULL
RETURNING sku, quantity;

-- name: StockGiveBack :exec
-- Puts released units back: runs only for rows StockReservationRelease
-- returned, so once per reservation.
UPDATE stock SET available = available + sqlc.arg(quantity)::integer, updated_at = now()
WHERE sku = sqlc.arg(sku);

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

-- name: StockReservedEver :one
SELECT EXISTS (SELECT 1 FROM stock_reservations WHERE order_id = $1);
