-- +goose Up

-- An order moves pending -> paid exactly once. The CHECK constraints make a
-- half-paid row impossible; the state-check guard makes a second move a no-op.
CREATE TABLE orders (
    id           uuid        PRIMARY KEY,
    customer_id  text        NOT NULL CHECK (customer_id <> ''),
    affiliate_id text        CHECK (affiliate_id <> ''),
    amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
    currency     text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    status       text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'paid')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    paid_at      timestamptz,
    CONSTRAINT orders_paid_at_iff_paid CHECK ((status = 'paid') = (paid_at IS NOT NULL))
);

-- The backfill walks paid orders by (paid_at, id).
CREATE INDEX orders_paid_at_idx ON orders (paid_at, id) WHERE status = 'paid';

-- Every status change that really happened, written in the same transaction as
-- the change. Its row count per order is the "paid" effect in the audit: with
-- the state check in place it can never exceed one.
CREATE TABLE order_transitions (
    id          bigserial   PRIMARY KEY,
    order_id    uuid        NOT NULL REFERENCES orders (id),
    from_status text        NOT NULL,
    to_status   text        NOT NULL,
    message_id  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX order_transitions_order_idx ON order_transitions (order_id);

-- +goose Down
DROP TABLE order_transitions;
DROP TABLE orders;
