-- name: IdempotencyKeyInsert :execrows
-- Claims a new key and locks it until locked_until. Zero rows: the key exists.
INSERT INTO idempotency_keys (scope, key, fingerprint, order_id, locked_until)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (scope, key) DO NOTHING;

-- name: IdempotencyKeyGet :one
SELECT * FROM idempotency_keys WHERE scope = $1 AND key = $2;

-- name: IdempotencyKeyRecover :execrows
-- Takes over a key whose holder crashed: only when its lock has expired and no
-- response was stored. Exactly one concurrent caller wins.
UPDATE idempotency_keys
SET locked_until = sqlc.arg(locked_until)
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
