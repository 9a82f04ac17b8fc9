-- Queries of the benchmark and the soak (internal/lab/bench, internal/lab/soak),
-- generated into internal/lab/labqueries. They seed a throw-away database in
-- bulk and read back what happened; the service itself never runs them.

-- name: BenchSeedPendingOrders :many
-- count pending orders with an affiliate, in one statement. The amounts vary
-- so that the sum of the commissions checks every single ledger row.
INSERT INTO orders (id, customer_id, affiliate_id, amount_cents, currency)
SELECT gen_random_uuid(), 'bench_c' || g, 'bench_a' || (g % 50), 1000 + (g::bigint * 7919) % 99000, 'BRL'
FROM generate_series(1, sqlc.arg(count)::int) AS g
RETURNING id, amount_cents;

-- name: BenchSeedPaidOrders :execrows
-- count orders already paid at paid_at, for the backfill run.
INSERT INTO orders (id, customer_id, affiliate_id, amount_cents, currency, status, paid_at)
SELECT gen_random_uuid(), 'bench_c' || g, 'bench_a' || (g % 50), 1000 + (g::bigint * 7919) % 99000, 'BRL',
       'paid', sqlc.arg(paid_at)::timestamptz
FROM generate_series(1, sqlc.arg(count)::int) AS g;

-- name: BenchSeedWebhookInbox :execrows
-- count old provider events in the webhook inbox, as months of traffic leave.
INSERT INTO webhook_inbox (event_id, event_type, order_id, received_at)
SELECT 'evt_seed_' || md5(random()::text || g), 'payment.succeeded', gen_random_uuid(),
       now() - interval '1 day'
FROM generate_series(1, sqlc.arg(count)::int) AS g;

-- name: BenchSeedConsumerInbox :execrows
-- count old deliveries in the order_confirmed consumer inbox (same key
-- shape as the real rows: consumer name and a UUID message id).
INSERT INTO consumer_inbox (consumer, message_id, order_id, processed_at)
SELECT 'order_confirmed', gen_random_uuid()::text, gen_random_uuid(), now() - interval '1 day'
FROM generate_series(1, sqlc.arg(count)::int) AS g;

-- name: BenchOrders :many
-- The given orders with what the audit does not show: their status, their
-- amount and the cents of commission credited to them (the sum the bench
-- checks to the cent). Their executions and effects are not counted here:
-- the bench reads AuditOrder (sql/queries/audit.sql), the query of GET
-- /orders/{id}/audit, for each order, so that the lab counts what the API
-- shows and the two cannot drift apart.
SELECT
    ord.id,
    ord.status,
    ord.amount_cents,
    (SELECT coalesce(sum(l.amount_cents), 0) FROM ledger_entries l
      WHERE l.order_id = ord.id AND l.entry_type = 'affiliate_commission')::bigint AS commission_cents
FROM orders ord
WHERE ord.id = ANY(sqlc.arg(order_ids)::uuid[])
ORDER BY ord.id;

-- name: BenchNotificationCount :one
-- Provider calls logged so far: the benchmark polls it to see the end coming.
SELECT count(*) FROM notification_log;

-- name: BenchExecutionCount :one
-- Handler runs so far, for the backfill run.
SELECT count(*) FROM executions WHERE handler = sqlc.arg(handler)::text;

-- name: BenchExecutionsMaxID :one
-- The newest execution log id: a cheap progress hint (an index lookup)
-- while a million executions are written; BenchExecutionCount confirms.
SELECT coalesce(max(id), 0)::bigint FROM executions;

-- name: SoakSeedItems :execrows
-- Gives each of the orders one unit of sku: the soak's stock-limited SKU.
INSERT INTO order_items (order_id, sku, quantity)
SELECT id, sqlc.arg(sku)::text, 1 FROM unnest(sqlc.arg(order_ids)::uuid[]) AS id;

-- name: SoakStock :one
-- A SKU's counter and what its live reservations hold, for the soak's
-- invariant: initial = available + held, and available never below 0.
SELECT s.available::bigint AS available,
       coalesce((SELECT sum(r.quantity) FROM stock_reservations r WHERE r.sku = s.sku AND r.released_at IS NULL), 0)::bigint AS held,
       (SELECT count(*) FROM stock_reservations r WHERE r.sku = s.sku AND r.released_at IS NOT NULL)::bigint AS released
FROM stock s WHERE s.sku = sqlc.arg(sku)::text;

-- name: SoakLedgerSums :many
-- The sum of each order's ledger entries, for the given orders.
SELECT o.id, coalesce((SELECT sum(l.amount_cents) FROM ledger_entries l WHERE l.order_id = o.id), 0)::bigint AS cents
FROM unnest(sqlc.arg(order_ids)::uuid[]) AS o(id);
