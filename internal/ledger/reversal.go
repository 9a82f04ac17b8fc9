package ledger

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// EntryTypeCommissionReversal is the ledger entry type that reverses an
// affiliate commission when its order is refunded.
const EntryTypeCommissionReversal = "affiliate_commission_reversal"

// ReverseCommission reverses the order's commission, once.
//
// Effect protected: the reversal, a financial movement like the credit it
// cancels. Money is never un-credited by deleting the row: the reversal is an
// entry of its own, with the opposite amount, under its own business key
// (order id + EntryTypeCommissionReversal), inserted with ON CONFLICT DO
// NOTHING like the commission. A refund webhook redelivered, a compensation
// retried: the first reversal inserts, every later one conflicts. The order's
// entries then sum to zero. This is why the key includes the entry type: the
// commission and its reversal are two intents of one order.
//
// Outcomes: Applied, AlreadyApplied (reversed before), NotApplicable (the
// order has no commission to reverse: no affiliate, or none released).
func ReverseCommission(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, error) {
	reversalKey := EntryKey(orderID.String(), EntryTypeCommissionReversal)
	n, err := q.LedgerReversalInsert(ctx, queries.LedgerReversalInsertParams{
		ReversalKey:   reversalKey,
		CommissionKey: EntryKey(orderID.String(), EntryTypeCommission),
		MessageID:     messageID,
	})
	if err != nil {
		return "", fmt.Errorf("reverse the commission of order %s: %w", orderID, err)
	}
	if n == 1 {
		return effect.Applied, nil
	}
	reversed, err := q.LedgerEntryExists(ctx, reversalKey)
	if err != nil {
		return "", fmt.Errorf("read the reversal of order %s: %w", orderID, err)
	}
	if reversed {
		return effect.AlreadyApplied, nil
	}
	return effect.NotApplicable, nil
}

// ReverseCommissionUnguarded is the mistake ReverseCommission prevents, kept
// for the scenarios "--without ledger-key": the same reversal keyed by the
// delivery ("delivery:<message id>:reversal"). A second refund event, the
// refund's own webhook after our refund, a replay: each is a new message,
// a new key, and reverses again; the affiliate ends owing the commission.
func ReverseCommissionUnguarded(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, error) {
	n, err := q.LedgerReversalInsertUnguarded(ctx, queries.LedgerReversalInsertUnguardedParams{
		ReversalKey: DeliveryKey(messageID) + ":reversal",
		OrderID:     orderID,
		MessageID:   messageID,
	})
	if err != nil {
		return "", fmt.Errorf("reverse the commission of order %s: %w", orderID, err)
	}
	if n == 0 {
		return effect.NotApplicable, nil
	}
	return effect.Applied, nil
}
