-- +goose Up

-- The transactional outbox: watermill-sql's message table for the "outbox"
-- topic, in the layout of its DefaultPostgreSQLSchema (watermill would create
-- the same table, but not inside a business transaction, so the migration
-- owns it). Each payload is the forwarder's JSON envelope:
-- {"destination_topic", "uuid", "payload", "metadata"}.
CREATE TABLE IF NOT EXISTS watermill_outbox (
    "offset"       bigserial,
    uuid           varchar(36) NOT NULL,
    created_at     timestamp   NOT NULL DEFAULT CURRENT_TIMESTAMP,
    payload        json        DEFAULT NULL,
    metadata       json        DEFAULT NULL,
    transaction_id xid8        NOT NULL,
    PRIMARY KEY (transaction_id, "offset")
);

-- The relay's progress through the outbox, per consumer group (watermill's
-- DefaultPostgreSQLOffsetsAdapter layout). Rows above offset_acked are the
-- backlog.
CREATE TABLE IF NOT EXISTS watermill_offsets_outbox (
    consumer_group                varchar(255) NOT NULL,
    offset_acked                  bigint,
    last_processed_transaction_id xid8         NOT NULL,
    PRIMARY KEY (consumer_group)
);

-- +goose Down
DROP TABLE watermill_offsets_outbox;
DROP TABLE watermill_outbox;
