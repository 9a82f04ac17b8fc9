-- +goose Up

-- A commission is never deleted, even when the order is refunded: it is
-- reversed by an entry of its own, under its own business key
-- ("<order id>:affiliate_commission_reversal"), with the opposite amount, so
-- the order's entries sum to zero and both stay as the record of what
-- happened. The entry type is part of the key for exactly this: the
-- commission and its reversal are two intents of one order.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_entry_type_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_entry_type_check
    CHECK (entry_type IN ('affiliate_commission', 'affiliate_commission_reversal'));
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_amount_cents_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_amount_sign CHECK (
    (entry_type = 'affiliate_commission' AND amount_cents >= 0)
    OR (entry_type = 'affiliate_commission_reversal' AND amount_cents < 0));

-- +goose Down
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_amount_sign;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_amount_cents_check CHECK (amount_cents >= 0);
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_entry_type_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_entry_type_check CHECK (entry_type IN ('affiliate_commission'));
