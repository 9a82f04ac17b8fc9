// Package ledger releases the affiliate commission: money that must be
// credited once per paid order, never twice, never zero times.
package ledger

import (
	"context"
	"fmt"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// EntryTypeCommission is the ledger entry type of an affiliate commission.
const EntryTypeCommission = "affiliate_commission"

// CommissionBasisPoints is the commission rate: 1000 bp = 10% of the order.
const CommissionBasisPoints = 1000

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
// ON CONFLICT DO NOTHING. Whichever delivery, retry, backfill or concurrent
// worker gets there first inserts the row; every other attempt affects zero
// rows and reports AlreadyApplied. Under READ COMMITTED the conflict never
// raises, even when two inserts race.
//
// The key must come from the intent. Keyed on the message id instead, two
// different provider events for one payment would both credit (see
// ReleaseCommissionUnguarded and the scenario "--without ledger-key").
func ReleaseCommission(ctx context.Context, q *queries.Queries, o queries.Order, messageID string) (effect.Outcome, error) {
	return releaseCommissionKeyedBy(ctx, q, o, messageID, EntryKey(o.ID.String(), EntryTypeCommission))
}

// ReleaseCommissionUnguarded is the mistake ReleaseCommission prevents, kept
// so the scenario "--without ledger-key" can show the damage: the same
// insert, keyed by the delivery ("delivery:<message id>") instead of the
// business intent. A redelivery of the same message still credits once; a
// second provider event for the same payment, a backfill or an operator's
// replay is a new message with a new key, and credits again.
func ReleaseCommissionUnguarded(ctx context.Context, q *queries.Queries, o queries.Order, messageID string) (effect.Outcome, error) {
	return releaseCommissionKeyedBy(ctx, q, o, messageID, DeliveryKey(messageID))
}

// DeliveryKey is the mistake's entry key: the delivery's, "delivery:<message
// id>", where EntryKey is the business intent's (ReleaseCommissionUnguarded,
// and its set form in the batch handler).
func DeliveryKey(messageID string) string { return "delivery:" + messageID }

// releaseCommissionKeyedBy inserts the commission under key.
//
// An order without an affiliate earns no commission, and neither does one
// whose commission rounds down to 0 cents (under 10 cents at 10%): both
// answer NotApplicable and write no row. A 0-cent row would credit nothing
// yet count as a commission released, in the audit and in every check that
// wants one ledger row per paid order with an affiliate.
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
