-- +goose Up

-- The positions of the Kafka consumer groups whose position commits with
-- their effects (CONSUMER_POSITION=with-effects on BROKER=kafka,
-- internal/platform/broker/kafkaposition.go). One row per partition a group
-- has read: next_offset is the first record not yet applied. A batch's
-- transaction locks its partitions' rows, applies the batch and moves them,
-- all in one COMMIT, so the group's position in PostgreSQL is never behind or
-- ahead of what the batch did; a member that joins seeks each partition to
-- its row. The group's offsets in Kafka are committed after, for Kafka's own
-- tools, and may lag.
CREATE TABLE kafka_positions (
    consumer_group text        NOT NULL CHECK (consumer_group <> ''),
    topic          text        NOT NULL CHECK (topic <> ''),
    partition      integer     NOT NULL CHECK (partition >= 0),
    next_offset    bigint      NOT NULL CHECK (next_offset >= 0),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, topic, partition)
);

-- +goose Down
DROP TABLE kafka_positions;
