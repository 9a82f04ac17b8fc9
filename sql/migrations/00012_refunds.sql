-- +goose Up

-- One refund per order. A row here is the order's refund intent: the
-- customer asked for it (POST /orders/{id}/refunds, with its Idempotency-Key
-- and the fingerprint of its body, for Stripe's semantics), or the order
-- could not be fulfilled (out_of_stock, the compensation of a paid order
-- whose items were short). The primary key makes the intent single: a second
-- request, a redelivered order_paid, a retried compensation all meet this row.
-- The gateway's refund key comes from the order, never from a delivery
-- (internal/payment, RefundKey), so the money is given back once whoever asks.
CREATE TABLE refund_requests (
    order_id        uuid        PRIMARY KEY REFERENCES orders (id),
    reason          text        NOT NULL CHECK (reason IN ('customer_request', 'out_of_stock')),
    idempotency_key text        CHECK (idempotency_key <> ''),
    fingerprint     text,
    response_body   bytea,
    requested_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT refund_requests_key_iff_customer
        CHECK ((reason = 'customer_request') = (idempotency_key IS NOT NULL)),
    CONSTRAINT refund_requests_key_has_fingerprint
        CHECK ((idempotency_key IS NULL) = (fingerprint IS NULL))
);

-- Every answer of the gateway to a refund call, as gateway_charge_calls is for
-- charges: the service's own record of what the provider said. A replayed
-- answer names the refund first made.
CREATE TABLE gateway_refund_calls (
    id          bigserial   PRIMARY KEY,
    order_id    uuid        NOT NULL REFERENCES orders (id),
    gateway_key text        NOT NULL,
    status      integer     NOT NULL,
    refund_id   text        CHECK (refund_id <> ''),
    replayed    boolean     NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gateway_refund_calls_order_idx ON gateway_refund_calls (order_id);

-- The customer is told twice about a refunded order, and each message once:
-- the confirmation of its payment and the notice of its refund. The log says
-- which one each provider answer was for.
ALTER TABLE notification_log ADD COLUMN template text NOT NULL DEFAULT 'order_confirmed'
    CHECK (template IN ('order_confirmed', 'order_refunded'));

-- +goose Down
ALTER TABLE notification_log DROP COLUMN template;
DROP TABLE gateway_refund_calls;
DROP TABLE refund_requests;
