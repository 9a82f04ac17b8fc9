-- name: LedgerEntryInsert :execrows
-- The unique ledger key. ON CONFLICT DO NOTHING never raises under READ
-- COMMITTED: the losing insert affects zero rows, which is "already applied".
INSERT INTO ledger_entries (entry_key, order_id, entry_type, affiliate_id, amount_cents, message_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (entry_key) DO NOTHING;
