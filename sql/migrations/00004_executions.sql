-- +goose Up

-- The execution log: one row per handler run, whatever its outcome. Comparing
-- its counts with the effect tables is the point of the audit endpoint:
-- executions may be many, effects must stay at one.
CREATE TABLE executions (
    id         bigserial   PRIMARY KEY,
    handler    text        NOT NULL,
    message_id text        NOT NULL,
    order_id   uuid,
    outcomes   jsonb       NOT NULL DEFAULT '{}',
    error      text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX executions_order_idx ON executions (order_id, handler);
CREATE INDEX executions_created_at_idx ON executions (created_at);

-- Messages that can never succeed (malformed payload, unknown order), with the
-- reason. They leave the broker's queue and wait here for an operator.
CREATE TABLE poison_messages (
    id             bigserial   PRIMARY KEY,
    topic          text        NOT NULL,
    handler        text        NOT NULL,
    message_id     text        NOT NULL,
    payload        bytea       NOT NULL,
    metadata       jsonb       NOT NULL DEFAULT '{}',
    reason         text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    reprocessed_at timestamptz
);
CREATE INDEX poison_messages_pending_idx ON poison_messages (id) WHERE reprocessed_at IS NULL;

-- +goose Down
DROP TABLE poison_messages;
DROP TABLE executions;
