-- +goose Up

-- The gateway's id of the order's charge, kept on the order's payment intent
-- (internal/payment/charge.go). Two writers may set it, whichever comes first:
-- the api, when it stores the gateway's answer (internal/payment/complete.go),
-- and the webhook ingest, from the signed payment.succeeded event
-- (internal/webhook/ingest.go). So the service's record of a charge does not
-- depend on the api surviving its call: an api killed between the gateway's
-- answer and storing it leaves the charge recorded by the provider's event,
-- and a refund can name it.
ALTER TABLE order_charges ADD COLUMN charge_id text CHECK (charge_id <> '');

-- +goose Down
ALTER TABLE order_charges DROP COLUMN charge_id;
