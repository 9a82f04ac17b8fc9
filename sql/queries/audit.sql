-- name: AuditOrder :one
-- Executions versus effects for one order. Executions count handler runs;
-- every effect column counts what was really applied, under the effect's
-- name (internal/effect). Every count reads an index by order id: anyone may
-- call the audit. This is the one definition of what the audit counts: the
-- lab's bench and soak read it for every order of a run.
SELECT
    (SELECT count(*) FROM executions e
      WHERE e.order_id = sqlc.arg(order_id)::uuid AND e.handler = 'order_paid')      AS executions_order_paid,
    (SELECT count(*) FROM executions e
      WHERE e.order_id = sqlc.arg(order_id)::uuid AND e.handler = 'order_confirmed') AS executions_order_confirmed,
    (SELECT count(*) FROM executions e
      WHERE e.order_id = sqlc.arg(order_id)::uuid AND e.handler = 'order_refunded')  AS executions_order_refunded,
    (SELECT count(*) FROM executions e
      WHERE e.order_id = sqlc.arg(order_id)::uuid AND e.handler = 'refund_requested') AS executions_refund_requested,
    (SELECT count(*) FROM executions e
      WHERE e.order_id = sqlc.arg(order_id)::uuid AND e.handler = 'refund_confirmed') AS executions_refund_confirmed,
    (SELECT count(*) FROM order_transitions t
      WHERE t.order_id = sqlc.arg(order_id)::uuid AND t.to_status = 'paid')          AS paid,
    (SELECT count(*) FROM ledger_entries l
      WHERE l.order_id = sqlc.arg(order_id)::uuid AND l.entry_type = 'affiliate_commission') AS commission,
    -- o.order_id is the envelope's order id as a column, indexed (migration
    -- 00008): the outbox keeps 30 days of rows, and this reads only the
    -- order's own.
    (SELECT count(*) FROM watermill_outbox o
      WHERE o.order_id = sqlc.arg(order_id)::uuid
        AND o.payload ->> 'destination_topic' = 'order_confirmed'
        -- an operator's replay (orderpaid reprocess) is not the flow enqueuing again
        AND o.payload -> 'metadata' ->> 'replayed_by' IS NULL)                      AS confirmation_enqueued,
    (SELECT count(*) FROM consumer_inbox i
      WHERE i.order_id = sqlc.arg(order_id)::uuid AND i.consumer = 'order_confirmed') AS confirmation_delivered,
    -- Distinct provider notification ids: a replayed answer carries the id of
    -- the notification first sent, so a crash that lost our log line of the
    -- first call is still counted once, through the replay.
    (SELECT count(DISTINCT n.provider_notification_id) FROM notification_log n
      WHERE n.order_id = sqlc.arg(order_id)::uuid AND n.template = 'order_confirmed') AS notification_sent,
    -- The customer's notice of a refund, counted the same way: a refunded
    -- order that was paid tells the customer twice, each message once.
    (SELECT count(DISTINCT n.provider_notification_id) FROM notification_log n
      WHERE n.order_id = sqlc.arg(order_id)::uuid AND n.template = 'order_refunded')  AS refund_notified,
    -- Distinct gateway charge ids the service was told of, for the same reason:
    -- a replayed answer names the charge first made. The gateway's answers
    -- and the charge the provider's signed event recorded on the order's
    -- payment intent (order_charges.charge_id): a charge whose answer died
    -- with the api is counted once, through its event.
    (SELECT count(DISTINCT k.charge_id) FROM (
        SELECT c.charge_id FROM gateway_charge_calls c
        WHERE c.order_id = sqlc.arg(order_id)::uuid
        UNION ALL
        SELECT ch.charge_id FROM order_charges ch
        WHERE ch.order_id = sqlc.arg(order_id)::uuid) k
      WHERE k.charge_id IS NOT NULL)                                                   AS charges,
    -- Each time the order's items really left the counter, or came back
    -- (stock_movements, written with the change itself).
    (SELECT count(*) FROM stock_movements m
      WHERE m.order_id = sqlc.arg(order_id)::uuid AND m.kind = 'reserve')             AS stock_reserved,
    (SELECT count(*) FROM stock_movements m
      WHERE m.order_id = sqlc.arg(order_id)::uuid AND m.kind = 'release')             AS stock_released,
    (SELECT count(*) FROM ledger_entries l
      WHERE l.order_id = sqlc.arg(order_id)::uuid
        AND l.entry_type = 'affiliate_commission_reversal')                           AS commission_reversed,
    (SELECT count(*) FROM order_transitions t
      WHERE t.order_id = sqlc.arg(order_id)::uuid AND t.to_status = 'refunded')      AS refunded,
    -- The provider refused the order's refund for good (paid ->
    -- refund_failed, migration 00015): its money is still with the merchant
    -- until a person refunds it in the provider's dashboard.
    (SELECT count(*) FROM order_transitions t
      WHERE t.order_id = sqlc.arg(order_id)::uuid AND t.to_status = 'refund_failed') AS refund_failed,
    -- The counts above whose evidence retention has removed rows of, for
    -- this order (audit_cleaned, written by the retention deletes): those
    -- counts are what is left, not what happened.
    ARRAY(SELECT a.evidence FROM audit_cleaned a
          WHERE a.order_id = sqlc.arg(order_id)::uuid ORDER BY a.evidence)::text[]    AS cleaned,
    -- What orderpaid reconcile settled for the order (reconcile_actions):
    -- each settlement once, however many runs found it.
    ARRAY(SELECT r.action FROM reconcile_actions r
          WHERE r.order_id = sqlc.arg(order_id)::uuid ORDER BY r.action)::text[]      AS reconciled;
