-- +goose Up

-- An order can end refunded: paid -> refunded when a paid order is refunded,
-- and pending -> refunded when the provider's refund arrives before its
-- payment (events come in any order). refunded is terminal: a late
-- payment.succeeded finds it and changes nothing (internal/order, MarkPaid
-- and MarkRefunded are both state checks).
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('pending', 'paid', 'refunded'));
ALTER TABLE orders ADD COLUMN refunded_at timestamptz;
ALTER TABLE orders DROP CONSTRAINT orders_paid_at_iff_paid;
ALTER TABLE orders ADD CONSTRAINT orders_paid_has_paid_at CHECK (status <> 'paid' OR paid_at IS NOT NULL);
ALTER TABLE orders ADD CONSTRAINT orders_pending_has_no_dates CHECK (status <> 'pending' OR (paid_at IS NULL AND refunded_at IS NULL));
ALTER TABLE orders ADD CONSTRAINT orders_refunded_at_iff_refunded CHECK ((status = 'refunded') = (refunded_at IS NOT NULL));

-- +goose Down
ALTER TABLE orders DROP CONSTRAINT orders_refunded_at_iff_refunded;
ALTER TABLE orders DROP CONSTRAINT orders_pending_has_no_dates;
ALTER TABLE orders DROP CONSTRAINT orders_paid_has_paid_at;
ALTER TABLE orders ADD CONSTRAINT orders_paid_at_iff_paid CHECK ((status = 'paid') = (paid_at IS NOT NULL));
ALTER TABLE orders DROP COLUMN refunded_at;
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('pending', 'paid'));
