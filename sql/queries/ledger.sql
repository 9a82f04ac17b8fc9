-- name: LedgerEntryInsert :execrows
-- The unique ledger key. ON CONFLICT DO NOTHING never raises under READ
-- COMMITTED: the losing insert affects zero rows, which is "already applied".
INSERT INTO ledger_entries (entry_key, order_id, entry_type, affiliate_id, amount_cents, message_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (entry_key) DO NOTHING;

-- name: LedgerCommissionInsertBatch :many
-- The unique ledger key, set-based: one commission row per order under its
-- business key, ON CONFLICT DO NOTHING. RETURNING gives back only the keys
-- this statement inserted: those orders are applied, every other order of
-- the set was credited before (already_applied). Under READ COMMITTED the
-- conflict never raises, even against a concurrent batch. The caller holds
-- each key once (ledger.ReleaseCommissionBatch).
--
-- Set forms (here each beside its per-message twin): the guard applied to a
-- set of distinct keys in one statement, for a batch of messages in one
-- transaction (internal/consumer/batch_steps.go), which dedupes the batch first.
INSERT INTO ledger_entries (entry_key, order_id, entry_type, affiliate_id, amount_cents, message_id)
SELECT unnest(sqlc.arg(entry_keys)::text[]), unnest(sqlc.arg(order_ids)::uuid[]), 'affiliate_commission',
       unnest(sqlc.arg(affiliate_ids)::text[]), unnest(sqlc.arg(amount_cents)::bigint[]), unnest(sqlc.arg(message_ids)::text[])
ON CONFLICT (entry_key) DO NOTHING
RETURNING entry_key;

-- name: LedgerReversalInsert :execrows
-- Reverses an order's commission once: the reversal copies the commission
-- row with the opposite amount under its own entry key. Zero rows: there is
-- no commission to reverse, or it was reversed before (the key conflicts).
INSERT INTO ledger_entries (entry_key, order_id, entry_type, affiliate_id, amount_cents, message_id)
SELECT sqlc.arg(reversal_key), c.order_id, 'affiliate_commission_reversal', c.affiliate_id, -c.amount_cents, sqlc.arg(message_id)
FROM ledger_entries c
WHERE c.entry_key = sqlc.arg(commission_key) AND c.amount_cents > 0
ON CONFLICT (entry_key) DO NOTHING;

-- name: LedgerEntryExists :one
SELECT EXISTS (SELECT 1 FROM ledger_entries WHERE entry_key = $1);

-- name: LedgerReversalInsertUnguarded :execrows
-- The mistake behind "--without ledger-key" for reversals: keyed by the
-- delivery, it reverses one of the order's commissions again for every new
-- message that asks.
INSERT INTO ledger_entries (entry_key, order_id, entry_type, affiliate_id, amount_cents, message_id)
SELECT sqlc.arg(reversal_key), c.order_id, 'affiliate_commission_reversal', c.affiliate_id, -c.amount_cents, sqlc.arg(message_id)
FROM ledger_entries c
WHERE c.order_id = sqlc.arg(order_id) AND c.entry_type = 'affiliate_commission' AND c.amount_cents > 0
ORDER BY c.id
LIMIT 1
ON CONFLICT (entry_key) DO NOTHING;

-- name: OrderLockForCommission :one
-- Serialises the commission with the order's refund: it takes the order's
-- row lock, which MarkRefunded's UPDATE and the refund request's
-- OrderGetForUpdate take too. Whichever comes second sees what the first
-- committed: a refund that came first leaves a status other than paid, or
-- a refund intent (RefundRequestExists, read after this), and no commission
-- is credited; a commission that came first is there for the refund to
-- reverse. The status is the locked row's newest version; anything else
-- this statement read would come from the snapshot it took before waiting.
SELECT o.status
FROM orders o
WHERE o.id = $1
FOR UPDATE OF o;

-- name: OrderLockForCommissionBatch :many
-- OrderLockForCommission for a set: the orders' row locks, in id order,
-- with each order's status; a refund asked is read after it
-- (RefundRequestOrdersBatch).
--
-- Set forms (here each beside its per-message twin): the guard applied to a
-- set of distinct keys in one statement, for a batch of messages in one
-- transaction (internal/consumer/batch.go), which dedupes the batch first.
SELECT o.id, o.status
FROM orders o
WHERE o.id = ANY(sqlc.arg(order_ids)::uuid[])
ORDER BY o.id
FOR UPDATE OF o;
