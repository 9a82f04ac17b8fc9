-- +goose Up

-- The affiliate ledger. entry_key is the business key of the intent
-- ("<order id>:<entry type>"), and its UNIQUE constraint is the guard:
-- a second insert for the same intent conflicts and does nothing, whichever
-- delivery, retry or backfill it came from.
CREATE TABLE ledger_entries (
    id           bigserial   PRIMARY KEY,
    entry_key    text        NOT NULL,
    order_id     uuid        NOT NULL REFERENCES orders (id),
    entry_type   text        NOT NULL CHECK (entry_type IN ('affiliate_commission')),
    affiliate_id text        NOT NULL,
    amount_cents bigint      NOT NULL CHECK (amount_cents >= 0),
    message_id   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ledger_entries_entry_key_key UNIQUE (entry_key)
);
CREATE INDEX ledger_entries_order_idx ON ledger_entries (order_id);

-- +goose Down
DROP TABLE ledger_entries;
