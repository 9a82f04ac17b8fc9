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

-- name: ExecutionInsertBatch :exec
-- The execution log of a batch in one statement (Consumers.Batched). A run
-- that named no order carries the zero UUID, a run that did not fail an
-- empty error: both are stored as NULL, as ExecutionInsert stores them.
INSERT INTO executions (handler, message_id, order_id, outcomes, error)
SELECT x.h, x.m, NULLIF(x.o, '00000000-0000-0000-0000-000000000000'::uuid), x.oc::jsonb, NULLIF(x.e, '')
FROM (SELECT unnest(sqlc.arg(handlers)::text[]) AS h, unnest(sqlc.arg(message_ids)::text[]) AS m,
             unnest(sqlc.arg(order_ids)::uuid[]) AS o, unnest(sqlc.arg(outcomes)::text[]) AS oc,
             unnest(sqlc.arg(errors)::text[]) AS e) AS x;
