-- +goose Up

-- A refund the provider refuses for good (a 4xx it will give again, whoever
-- asks: the charge is disputed, too old to refund, ...) ends the order in a
-- status of its own, refund_failed, instead of leaving it paid with nothing
-- but a poison queue row to say so. The move paid -> refund_failed is a
-- state check (internal/order, MarkRefundFailed), written in the
-- transaction that records the gateway's answer; a replay of the refund
-- finds it and does not ask the gateway again. The money is still with the
-- merchant, so the order keeps its paid_at; a person refunds it in the
-- provider's dashboard, and the provider's payment.refunded (or orderpaid
-- reconcile) then moves it refund_failed -> refunded (MarkRefunded).
-- refund_failed is not pending: a late payment.succeeded changes nothing.
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check
    CHECK (status IN ('pending', 'paid', 'refunded', 'refund_failed'));
ALTER TABLE orders ADD CONSTRAINT orders_refund_failed_has_paid_at
    CHECK (status <> 'refund_failed' OR paid_at IS NOT NULL);

-- What the gateway said when it refused a refund for good: its body, cut to
-- 200 bytes, the reason a person reads (the poison queue's row names it
-- too). NULL for every other answer.
ALTER TABLE gateway_refund_calls ADD COLUMN detail text;

-- +goose Down
-- Refuses while an order is refund_failed (the old CHECK fails): decide
-- first what those orders are.
ALTER TABLE gateway_refund_calls DROP COLUMN detail;
ALTER TABLE orders DROP CONSTRAINT orders_refund_failed_has_paid_at;
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('pending', 'paid', 'refunded'));
