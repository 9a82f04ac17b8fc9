-- +goose Up

-- One charge per order, whatever the Idempotency-Key (internal/payment/charge.go).
-- The Idempotency-Key protects a request; this row protects the charge. Its
-- primary key lets exactly one request per order hold the right to call the
-- gateway, and the gateway is called with a key derived from the order and
-- the attempt (payment.ChargeKey), so a retry with any Idempotency-Key meets
-- the first charge at the gateway instead of making a second.
--
-- state:
--   charging  a request holds the charge until locked_until, or held it and
--             its outcome is unknown (it crashed, or the gateway's answer was
--             lost): the next request takes it over with the same attempt,
--             and so the same gateway key;
--   charged   the gateway confirmed the charge: no request calls it again;
--   refused   the gateway refused this attempt for good (nothing charged): a
--             new request may start the next attempt, under a new gateway key.
CREATE TABLE order_charges (
    order_id     uuid        PRIMARY KEY REFERENCES orders (id),
    attempt      integer     NOT NULL DEFAULT 1 CHECK (attempt > 0),
    state        text        NOT NULL DEFAULT 'charging' CHECK (state IN ('charging', 'charged', 'refused')),
    holder_scope text        NOT NULL,
    holder_key   text        NOT NULL,
    locked_until timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT order_charges_lock_only_while_charging CHECK (state = 'charging' OR locked_until IS NULL)
);

-- The service's own record of every answer the gateway gave to a charge call,
-- written with the response it led to. The audit's "charges" effect counts
-- the distinct charge ids in it: a replayed answer names the charge first
-- made, so a charge whose first answer was lost is still counted once.
CREATE TABLE gateway_charge_calls (
    id          bigserial   PRIMARY KEY,
    order_id    uuid        NOT NULL REFERENCES orders (id),
    gateway_key text        NOT NULL,
    status      integer     NOT NULL,
    charge_id   text        CHECK (charge_id <> ''),
    replayed    boolean     NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gateway_charge_calls_order_idx ON gateway_charge_calls (order_id);

-- +goose Down
DROP TABLE gateway_charge_calls;
DROP TABLE order_charges;
