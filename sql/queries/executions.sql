-- name: ExecutionInsert :exec
INSERT INTO executions (handler, message_id, order_id, outcomes, error)
VALUES ($1, $2, $3, $4, $5);

-- name: PoisonInsert :exec
INSERT INTO poison_messages (topic, handler, message_id, payload, metadata, reason)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: PoisonListPending :many
SELECT * FROM poison_messages WHERE reprocessed_at IS NULL ORDER BY id;

-- name: PoisonMarkReprocessed :execrows
UPDATE poison_messages SET reprocessed_at = now()
WHERE id = $1 AND reprocessed_at IS NULL;

-- name: PoisonCountPending :one
SELECT count(*) FROM poison_messages WHERE reprocessed_at IS NULL;
