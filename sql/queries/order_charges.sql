-- name: OrderChargeInsert :execrows
-- Claims the order's charge for the first time. Zero rows: another request
-- claimed it before (the conflict waits for that insert to commit). Like the
-- key's (idempotency_keys.sql), every lock in this file is written as now() +
-- lease_ms and compared with now(), on the database's clock; now() is one
-- instant per transaction, so a key and a charge claimed together are locked
-- until the same time.
INSERT INTO order_charges (order_id, holder_scope, holder_key, locked_until)
VALUES (sqlc.arg(order_id), sqlc.arg(holder_scope), sqlc.arg(holder_key),
        now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond')
ON CONFLICT (order_id) DO NOTHING;

-- name: OrderChargeGet :one
-- Reads the order's charge with its lock as the database's clock sees it:
-- held while locked_until is after now(), for lock_left_ms more (0 when not
-- held).
SELECT *,
       coalesce(locked_until > now(), false)::boolean AS held,
       greatest(ceil(extract(epoch FROM locked_until - now()) * 1000), 0)::bigint AS lock_left_ms
FROM order_charges WHERE order_id = $1;

-- name: OrderChargeTakeOver :execrows
-- Takes over a charge whose holder crashed or gave it back, keeping its
-- attempt (and so its gateway key): only while its outcome is unknown and its
-- lock has expired, or once orderpaid reconcile released it (the gateway
-- never saw its key). Exactly one concurrent caller wins.
UPDATE order_charges
SET state = 'charging', holder_scope = sqlc.arg(holder_scope), holder_key = sqlc.arg(holder_key),
    locked_until = now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond', updated_at = now()
WHERE order_id = sqlc.arg(order_id) AND attempt = sqlc.arg(attempt)
  AND (state = 'released' OR (state = 'charging' AND locked_until < now()));

-- name: OrderChargeRetry :execrows
-- Starts the next attempt after the gateway refused the last one for good.
-- Exactly one concurrent caller wins.
UPDATE order_charges
SET attempt = attempt + 1, state = 'charging',
    holder_scope = sqlc.arg(holder_scope), holder_key = sqlc.arg(holder_key),
    locked_until = now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond', updated_at = now()
WHERE order_id = sqlc.arg(order_id) AND attempt = sqlc.arg(attempt) AND state = 'refused';

-- name: OrderChargeSettle :execrows
-- Records the gateway's definitive answer to an attempt: charged (with the
-- gateway's charge id) or refused. Any holder of the attempt may settle it
-- (they all sent the same gateway key, so they all got the same answer); a
-- settled attempt stays settled, and a charge id recorded first by the
-- provider's event (OrderChargeRecordFromEvent) is kept.
UPDATE order_charges
SET state = sqlc.arg(state), locked_until = NULL, updated_at = now(),
    charge_id = coalesce(charge_id, sqlc.narg(charge_id))
WHERE order_id = sqlc.arg(order_id) AND attempt = sqlc.arg(attempt) AND state = 'charging';

-- name: OrderChargeRecordFromEvent :exec
-- Records the charge a signed payment.succeeded names, in the webhook's own
-- transaction: the order's charge is settled as charged (no request calls the
-- gateway for it again, whatever the gateway still remembers of its key) and
-- its charge id is kept unless one was recorded first. An order the service
-- never claimed a charge for (the charge was made elsewhere) gets its row
-- here, already charged. The event is the provider's word that money moved:
-- it settles an attempt still charging, even one whose holder is at the
-- gateway now (that holder's settle and release then change nothing).
INSERT INTO order_charges (order_id, state, holder_scope, holder_key, charge_id)
VALUES (sqlc.arg(order_id), 'charged', 'webhook', sqlc.arg(event_id), sqlc.narg(charge_id))
ON CONFLICT (order_id) DO UPDATE
SET state = 'charged', locked_until = NULL, updated_at = now(),
    charge_id = coalesce(order_charges.charge_id, excluded.charge_id);

-- name: OrderChargeRelease :exec
-- Gives the charge back after an answer that settles nothing (a 5xx, a
-- timeout), so the next request can take it over at once. Only the holder's
-- own lock is released: one that expired and was taken over is not.
UPDATE order_charges
SET locked_until = now() - interval '1 second', updated_at = now()
WHERE order_id = sqlc.arg(order_id) AND attempt = sqlc.arg(attempt) AND state = 'charging'
  AND holder_scope = sqlc.arg(holder_scope) AND holder_key = sqlc.arg(holder_key);

-- name: GatewayChargeCallInsert :exec
INSERT INTO gateway_charge_calls (order_id, gateway_key, status, charge_id, replayed)
VALUES ($1, $2, $3, $4, $5);
