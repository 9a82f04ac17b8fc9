-- name: LedgerEntryInsert :execrows
-- The unique ledger key. ON CONFLICT DO NOTHING never raises under READ
-- COMMITTED: the losing insert affects zero rows, which is "already applied".
INSERT INTO ledger_entries (entry_key, order_id, entry_type, affiliate_id, amount_cents, message_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (entry_key) DO NOTHING;

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
