-- +goose Up

-- The audit's confirmation_delivered counts one order's rows of one consumer
-- (sql/queries/audit.sql: consumer_inbox WHERE order_id = $1 AND consumer =
-- 'order_confirmed'). With an index on order_id alone beside the primary key
-- (consumer, message_id), the plan depended on the table's statistics:
-- before ANALYZE (a fresh database, a bulk load, autovacuum not yet round)
-- PostgreSQL also read the primary key for consumer = 'order_confirmed',
-- every confirmation ever delivered, to answer for one order. One index on
-- both columns answers from the order's own rows whatever the statistics
-- say. The audit is the only reader by order, and an index on (order_id,
-- consumer) serves a read by order_id alone as well, so it replaces
-- consumer_inbox_order_idx rather than adding a second one to write.
CREATE INDEX consumer_inbox_order_consumer_idx ON consumer_inbox (order_id, consumer);
DROP INDEX consumer_inbox_order_idx;

-- +goose Down
CREATE INDEX consumer_inbox_order_idx ON consumer_inbox (order_id);
DROP INDEX consumer_inbox_order_consumer_idx;
