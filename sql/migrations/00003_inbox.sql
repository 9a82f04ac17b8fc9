-- +goose Up

-- Webhook inbox: one row per provider event id. Written in the same
-- transaction as the order_paid outbox message, so "event accepted" and
-- "order_paid enqueued" are one fact.
CREATE TABLE webhook_inbox (
    event_id    text        PRIMARY KEY,
    event_type  text        NOT NULL,
    order_id    uuid,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_inbox_received_at_idx ON webhook_inbox (received_at);

-- Consumer inbox: one row per (consumer, message id) that a consumer finished.
CREATE TABLE consumer_inbox (
    consumer     text        NOT NULL,
    message_id   text        NOT NULL,
    order_id     uuid,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);
CREATE INDEX consumer_inbox_order_idx ON consumer_inbox (order_id);
CREATE INDEX consumer_inbox_processed_at_idx ON consumer_inbox (processed_at);

-- What the notification provider answered for each call we made. replayed is
-- the provider's own word ("Idempotent-Replayed: true"): rows with
-- replayed = false are notifications that were really sent.
CREATE TABLE notification_log (
    id                       bigserial   PRIMARY KEY,
    order_id                 uuid        NOT NULL,
    message_id               text        NOT NULL,
    idempotency_key          text        NOT NULL,
    provider_notification_id text        NOT NULL,
    replayed                 boolean     NOT NULL,
    created_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notification_log_order_idx ON notification_log (order_id);

-- +goose Down
DROP TABLE notification_log;
DROP TABLE consumer_inbox;
DROP TABLE webhook_inbox;
