-- +goose Up

-- Stripe-style Idempotency-Key store for POST /orders/{id}/payments.
-- (scope, key) is the primary key: a key belongs to one customer.
-- locked_until is set while a request holds the key; a crashed request's lock
-- expires and the next request with the same key recovers it.
CREATE TABLE idempotency_keys (
    scope           text        NOT NULL,
    key             text        NOT NULL CHECK (key <> ''),
    fingerprint     text        NOT NULL,
    order_id        uuid        NOT NULL REFERENCES orders (id),
    locked_until    timestamptz,
    response_status integer,
    response_body   bytea,
    created_at      timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz,
    PRIMARY KEY (scope, key),
    CONSTRAINT idempotency_keys_completed_has_response
        CHECK ((completed_at IS NULL) = (response_status IS NULL))
);
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
