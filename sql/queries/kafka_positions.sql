-- The positions of Kafka consumer groups kept with their effects
-- (CONSUMER_POSITION=with-effects on BROKER=kafka; migration 00017).

-- name: KafkaPositions :many
-- Where a member that joins the group starts each partition it was given.
SELECT partition, next_offset FROM kafka_positions
WHERE consumer_group = sqlc.arg(consumer_group) AND topic = sqlc.arg(topic);

-- name: KafkaPositionsStart :exec
-- A partition read for the first time starts where its first batch begins.
INSERT INTO kafka_positions (consumer_group, topic, partition, next_offset)
SELECT sqlc.arg(consumer_group)::text, sqlc.arg(topic)::text, p.partition, p.next_offset
FROM (SELECT unnest(sqlc.arg(partitions)::int[]) AS partition, unnest(sqlc.arg(next_offsets)::bigint[]) AS next_offset) AS p
ORDER BY p.partition
ON CONFLICT (consumer_group, topic, partition) DO NOTHING;

-- name: KafkaPositionsLock :many
-- The positions of a batch's partitions, locked until the batch's
-- transaction ends: a second member holding the same partitions (one the
-- group dropped and that does not know it yet) waits here, then finds them
-- moved.
SELECT partition, next_offset FROM kafka_positions
WHERE consumer_group = sqlc.arg(consumer_group) AND topic = sqlc.arg(topic)
  AND partition = ANY(sqlc.arg(partitions)::int[])
ORDER BY partition
FOR UPDATE;

-- name: KafkaPositionsMove :exec
-- Moves the positions past what the batch settled, in the batch's
-- transaction.
UPDATE kafka_positions AS k SET next_offset = p.next_offset, updated_at = now()
FROM (SELECT unnest(sqlc.arg(partitions)::int[]) AS partition, unnest(sqlc.arg(next_offsets)::bigint[]) AS next_offset) AS p
WHERE k.consumer_group = sqlc.arg(consumer_group) AND k.topic = sqlc.arg(topic) AND k.partition = p.partition;
