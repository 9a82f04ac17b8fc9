-- name: IdempotencyKeyInsert :execrows
-- Claims a new key and locks it for lease_ms. Zero rows: the key exists.
-- Every lock in this file is written as now() + lease_ms and compared with
-- now(): on the database's clock, never the api's, so an api host whose
-- clock is off cannot make a held key look expired
-- (internal/payment/clock_skew_test.go).
INSERT INTO idempotency_keys (scope, key, fingerprint, order_id, locked_until)
VALUES (sqlc.arg(scope), sqlc.arg(key), sqlc.arg(fingerprint), sqlc.arg(order_id),
        now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond')
ON CONFLICT (scope, key) DO NOTHING;

-- name: IdempotencyKeyGet :one
-- Reads the key with its lock as the database's clock sees it: held while
-- locked_until is after now(), for lock_left_ms more (0 when not held).
SELECT *,
       coalesce(locked_until > now(), false)::boolean AS held,
       greatest(ceil(extract(epoch FROM locked_until - now()) * 1000), 0)::bigint AS lock_left_ms
FROM idempotency_keys WHERE scope = $1 AND key = $2;

-- name: IdempotencyKeyRecover :execrows
-- Takes over a key whose holder crashed: only when its lock has expired and no
-- response was stored. Exactly one concurrent caller wins.
UPDATE idempotency_keys
SET locked_until = now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond'
WHERE scope = sqlc.arg(scope) AND key = sqlc.arg(key)
  AND completed_at IS NULL AND locked_until < now();

-- name: IdempotencyKeyComplete :execrows
UPDATE idempotency_keys
SET response_status = $3, response_body = $4, completed_at = now(), locked_until = NULL
WHERE scope = $1 AND key = $2 AND completed_at IS NULL;

-- name: IdempotencyKeyRelease :exec
-- Gives the key back after a failure that is not stored (a transient one), so
-- the client's retry can run at once.
UPDATE idempotency_keys
SET locked_until = now() - interval '1 second'
WHERE scope = $1 AND key = $2 AND completed_at IS NULL;

-- name: IdempotencyKeyDeleteOlderThan :execrows
DELETE FROM idempotency_keys
WHERE created_at < $1 AND completed_at IS NOT NULL;
