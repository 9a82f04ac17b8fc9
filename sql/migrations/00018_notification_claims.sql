-- +goose Up

-- One e-mail per order and template, whatever the message that asks for it
-- (internal/notify/claim.go). The consumer inbox remembers messages for its
-- window (7 days) and the provider remembers keys for about a day; a replay
-- later than both (a relay switch, a Kafka group whose offsets expired, a
-- poisoned message replayed late) used to send the e-mail again. This row
-- is the e-mail's own guard: retention never removes it.
--
-- state:
--   sending  a consumer holds the claim until locked_until and is calling the
--            provider, or held it and its outcome is unknown (it crashed or
--            got no answer): the next one asks the provider before sending;
--   sent     the provider sent it (notification_id): nobody calls again.
--
-- provider_key is the Idempotency-Key every call for this claim sends: the
-- first message's, kept whatever message comes next.
CREATE TABLE notification_claims (
    order_id        uuid        NOT NULL REFERENCES orders (id),
    template        text        NOT NULL,
    provider_key    text        NOT NULL CHECK (provider_key <> ''),
    state           text        NOT NULL DEFAULT 'sending' CHECK (state IN ('sending', 'sent')),
    holder          text        NOT NULL,
    locked_until    timestamptz,
    notification_id text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (order_id, template),
    CONSTRAINT notification_claims_lock_only_while_sending CHECK (state = 'sending' OR locked_until IS NULL)
);

-- The e-mails sent before this table existed are claimed and settled, so an
-- upgrade sends none of them again.
INSERT INTO notification_claims (order_id, template, provider_key, state, holder, notification_id)
SELECT DISTINCT ON (l.order_id, l.template) l.order_id, l.template, l.idempotency_key, 'sent', 'migration', l.provider_notification_id
FROM notification_log l
JOIN orders o ON o.id = l.order_id
ORDER BY l.order_id, l.template, l.id;

-- +goose Down
DROP TABLE notification_claims;
