-- name: NotificationClaimInsert :execrows
-- Claims the order's e-mail of a template for the first time, locked until
-- now() + lease_ms on the database's clock. Zero rows: it was claimed
-- before (the conflict waits for that insert to commit).
INSERT INTO notification_claims (order_id, template, provider_key, holder, locked_until)
VALUES (sqlc.arg(order_id), sqlc.arg(template), sqlc.arg(provider_key), sqlc.arg(holder),
        now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond')
ON CONFLICT (order_id, template) DO NOTHING;

-- name: NotificationClaimGet :one
-- The claim with its lock as the database's clock sees it.
SELECT *,
       coalesce(locked_until > now(), false)::boolean AS held,
       greatest(ceil(extract(epoch FROM locked_until - now()) * 1000), 0)::bigint AS lock_left_ms
FROM notification_claims WHERE order_id = $1 AND template = $2;

-- name: NotificationClaimTakeOver :execrows
-- Takes over a claim whose holder crashed or gave it back: only while it is
-- sending and its lock has expired. Exactly one concurrent caller wins.
UPDATE notification_claims
SET holder = sqlc.arg(holder), updated_at = now(),
    locked_until = now() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond'
WHERE order_id = sqlc.arg(order_id) AND template = sqlc.arg(template)
  AND state = 'sending' AND locked_until < now();

-- name: NotificationClaimSettle :exec
-- The provider sent it: nobody calls again. Any holder may settle (they all
-- sent the claim's key); a settled claim stays settled.
UPDATE notification_claims
SET state = 'sent', locked_until = NULL, updated_at = now(),
    notification_id = coalesce(notification_id, sqlc.arg(notification_id))
WHERE order_id = sqlc.arg(order_id) AND template = sqlc.arg(template) AND state = 'sending';

-- name: NotificationClaimRelease :exec
-- Gives the claim back after a call that settled nothing, so the next
-- delivery takes it over at once (and asks first). Only the holder's own lock.
UPDATE notification_claims
SET locked_until = now() - interval '1 second', updated_at = now()
WHERE order_id = sqlc.arg(order_id) AND template = sqlc.arg(template)
  AND state = 'sending' AND holder = sqlc.arg(holder);
