-- +goose Up

-- What orderpaid reconcile settled (internal/ops/reconcile). One row per action,
-- keyed by what the action settles: two runs at once, or a run repeated,
-- find the row and settle nothing twice. The audit lists an order's rows
-- under "reconciled".
--
-- action:
--   charge_completed      the gateway had made the charge of a key whose answer
--                         was lost; its payment.succeeded was accepted
--                         (key: the gateway's charge id)
--   charge_released       the gateway had no charge under the key of an attempt
--                         left charging past its lease; the attempt was given
--                         back, the next request takes it over under the same
--                         key (key: the gateway key)
--   refund_recorded       the gateway had refunded the order's charge without
--                         the service knowing; its payment.refunded was
--                         accepted (key: the gateway's refund id)
--   confirmation_resent   a paid order's e-mail never reached the provider;
--                         order_confirmed was written to the outbox again,
--                         with its one message id (key: that id)
CREATE TABLE reconcile_actions (
    action     text        NOT NULL CHECK (action IN ('charge_completed', 'charge_released', 'refund_recorded', 'confirmation_resent')),
    key        text        NOT NULL CHECK (key <> ''),
    order_id   uuid        NOT NULL REFERENCES orders (id),
    detail     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (action, key)
);
CREATE INDEX reconcile_actions_order_id ON reconcile_actions (order_id);

-- Reconcile asks, per order, whether the provider's payment.succeeded was
-- accepted already (then the flow has the charge, and a late order is only
-- late): by order id, as every other per-order read.
CREATE INDEX webhook_inbox_order_id ON webhook_inbox (order_id);

-- released: an attempt reconcile gave back (the gateway had no charge under
-- its key): the next request takes it over with the same attempt, and so
-- the same gateway key, as it takes over a charging attempt whose lease
-- expired. Nothing is left charging past its lease.
ALTER TABLE order_charges DROP CONSTRAINT order_charges_state_check;
ALTER TABLE order_charges ADD CONSTRAINT order_charges_state_check
    CHECK (state IN ('charging', 'charged', 'refused', 'released'));

-- +goose Down
UPDATE order_charges SET state = 'charging' WHERE state = 'released';
ALTER TABLE order_charges DROP CONSTRAINT order_charges_state_check;
ALTER TABLE order_charges ADD CONSTRAINT order_charges_state_check
    CHECK (state IN ('charging', 'charged', 'refused'));
DROP INDEX webhook_inbox_order_id;
DROP TABLE reconcile_actions;
