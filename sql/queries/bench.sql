-- Queries of the benchmark and the soak (internal/lab/bench, internal/lab/soak).
-- They seed a throw-away database in bulk and read back what happened; the
-- service itself never runs them.

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

-- name: BenchOrderEffects :many
-- Executions versus effects for each of the given orders, in one pass: the
-- same counts as AuditOrder, for many orders at once.
WITH confirmations AS (
    SELECT o.payload -> 'metadata' ->> 'order_id' AS order_id, count(*) AS n
    FROM watermill_outbox o
    WHERE o.payload ->> 'destination_topic' = 'order_confirmed'
    GROUP BY 1
)
SELECT
    ord.id,
    ord.status,
    ord.amount_cents,
    (SELECT count(*) FROM executions e
      WHERE e.order_id = ord.id AND e.handler = 'order_paid')                 AS executions_order_paid,
    (SELECT count(*) FROM executions e
      WHERE e.order_id = ord.id AND e.handler = 'order_confirmed')            AS executions_order_confirmed,
    (SELECT count(*) FROM order_transitions t
      WHERE t.order_id = ord.id AND t.to_status = 'paid')                     AS paid,
    (SELECT count(*) FROM ledger_entries l
      WHERE l.order_id = ord.id AND l.entry_type = 'affiliate_commission')    AS commission,
    (SELECT coalesce(sum(l.amount_cents), 0) FROM ledger_entries l
      WHERE l.order_id = ord.id AND l.entry_type = 'affiliate_commission')::bigint AS commission_cents,
    coalesce(c.n, 0)::bigint                                                  AS confirmation_enqueued,
    (SELECT count(*) FROM consumer_inbox i
      WHERE i.order_id = ord.id AND i.consumer = 'order_confirmed')           AS confirmation_delivered,
    (SELECT count(DISTINCT n.provider_notification_id) FROM notification_log n
      WHERE n.order_id = ord.id)                                              AS notification_sent
FROM orders ord
LEFT JOIN confirmations c ON c.order_id = ord.id::text
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
