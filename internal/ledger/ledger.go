// Package ledger releases the affiliate commission: money that must be
// credited once per paid order, never twice, never zero times.
package ledger

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

const (
	EntryTypeCommission   = "affiliate_commission" // the ledger entry type of an affiliate commission
	CommissionBasisPoints = 1000                   // the commission rate: 1000 bp = 10% of the order
)

// EntryKey is the business key of a ledger entry: it names the business
// intent ("the commission of order X"), not the delivery that asked for it.
func EntryKey(orderID, entryType string) string {
	return orderID + ":" + entryType
}

// Commission is the amount an affiliate earns on an order.
func Commission(amountCents int64) int64 {
	return amountCents * CommissionBasisPoints / 10_000
}

// ReleaseCommission credits the order's affiliate, once.
//
// Effect protected: the commission credit. Technique: a ledger row whose
// UNIQUE entry_key is the business key (order id + entry type), inserted with
// ON CONFLICT DO NOTHING: whoever gets there first inserts it, every other
// attempt affects zero rows (AlreadyApplied), and a race never raises.
//
// The key must come from the intent. Keyed on the message id instead, two
// different provider events for one payment would both credit (see
// ReleaseCommissionUnguarded and the scenario "--without ledger-key").
func ReleaseCommission(ctx context.Context, q *queries.Queries, o queries.Order, messageID string) (effect.Outcome, error) {
	return releaseCommissionKeyedBy(ctx, q, o, messageID, EntryKey(o.ID.String(), EntryTypeCommission))
}

// ReleaseCommissionUnguarded is the mistake ReleaseCommission prevents: the
// same insert keyed by the delivery (DeliveryKey). A redelivery still credits
// once; a second provider event, a backfill or a replay credits again.
func ReleaseCommissionUnguarded(ctx context.Context, q *queries.Queries, o queries.Order, messageID string) (effect.Outcome, error) {
	return releaseCommissionKeyedBy(ctx, q, o, messageID, DeliveryKey(messageID))
}

// DeliveryKey is the mistake's entry key, where EntryKey is the intent's.
func DeliveryKey(messageID string) string { return "delivery:" + messageID }

// releaseCommissionKeyedBy inserts the commission under key.
//
// No affiliate, or a commission that rounds down to 0 cents: NotApplicable,
// no row (a 0-cent row would count as a commission released, in the audit).
func releaseCommissionKeyedBy(ctx context.Context, q *queries.Queries, o queries.Order, messageID, key string) (effect.Outcome, error) {
	if !o.AffiliateID.Valid || Commission(o.AmountCents) == 0 {
		return effect.NotApplicable, nil
	}
	n, err := q.LedgerEntryInsert(ctx, queries.LedgerEntryInsertParams{
		EntryKey:    key,
		OrderID:     o.ID,
		EntryType:   EntryTypeCommission,
		AffiliateID: o.AffiliateID.String,
		AmountCents: Commission(o.AmountCents),
		MessageID:   messageID,
	})
	if err != nil {
		return "", fmt.Errorf("insert commission for order %s: %w", o.ID, err)
	}
	if n == 0 {
		return effect.AlreadyApplied, nil
	}
	return effect.Applied, nil
}

// BatchCommission is one order's commission in a batch: the key its row
// goes under, the order it is earned on, and the message that credits it.
type BatchCommission struct {
	Key         string
	OrderID     uuid.UUID
	AffiliateID pgtype.Text
	AmountCents int64 // the order's amount; the commission is computed from it
	MessageID   string
}

// ReleaseCommissionBatch is ReleaseCommission for distinct keys in one
// INSERT ... ON CONFLICT (entry_key) DO NOTHING RETURNING entry_key: a key it
// returns is applied, any other already_applied; not_applicable as one by one.
func ReleaseCommissionBatch(ctx context.Context, q *queries.Queries, cs []BatchCommission) (map[string]effect.Outcome, error) {
	outcomes := make(map[string]effect.Outcome, len(cs))
	var p queries.LedgerCommissionInsertBatchParams
	for _, c := range cs {
		if !c.AffiliateID.Valid || Commission(c.AmountCents) == 0 {
			outcomes[c.Key] = effect.NotApplicable
			continue
		}
		outcomes[c.Key] = effect.AlreadyApplied // unless RETURNING names it
		p.EntryKeys = append(p.EntryKeys, c.Key)
		p.OrderIds = append(p.OrderIds, c.OrderID)
		p.AffiliateIds = append(p.AffiliateIds, c.AffiliateID.String)
		p.AmountCents = append(p.AmountCents, Commission(c.AmountCents))
		p.MessageIds = append(p.MessageIds, c.MessageID)
	}
	if len(p.EntryKeys) == 0 {
		return outcomes, nil
	}
	inserted, err := q.LedgerCommissionInsertBatch(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("insert %d commissions: %w", len(p.EntryKeys), err)
	}
	for _, key := range inserted {
		outcomes[key] = effect.Applied
	}
	return outcomes, nil
}
