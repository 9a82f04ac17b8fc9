package consumer

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// The set forms of HandleOrderPaid's guards, for HandleOrderPaidBatch: one
// statement answers for every message of the batch. A batch dedupes by
// order first: the first message of an order gets the guards' answers,
// every later one already_applied. With a guard switched off the lab runs
// its messages one at a time instead (internal/lab/switches): no mistake
// has a set form.

// enqueueConfirmationsBatch writes the confirmation of each message of
// moved (the messages that moved an order to fulfil) to the outbox in tx,
// step 1's transaction, in one write, each as its message's step
// "confirmation_enqueued".
func (c *Consumers) enqueueConfirmationsBatch(b *batch, tx pgx.Tx, moved []*batchItem) error {
	if len(moved) == 0 {
		return nil
	}
	var confirmations []*message.Message
	var enqueued []*telemetry.Step
	for _, it := range moved {
		m, err := messages.NewOrderConfirmed(it.run.OrderID.UUID)
		if err != nil {
			return err
		}
		ctx, s := it.run.Begin(it.ctx, effect.ConfirmationEnqueued, effect.Outbox)
		// The confirmation continues its own order's trace. outbox.Publish
		// runs below under b.ctx, which holds no span, and so leaves this
		// trace context in place.
		telemetry.InjectMessage(ctx, m)
		confirmations, enqueued = append(confirmations, m), append(enqueued, s)
	}
	if err := outbox.Publish(b.ctx, tx, messages.TopicOrderConfirmed, confirmations...); err != nil {
		return err
	}
	for _, s := range enqueued {
		s.End(effect.Applied)
	}
	return nil
}

// commissionKeys gives each message still standing after step 1 the
// ledger key its commission is inserted under in step 2, the business key
// ledger.EntryKey(order id, affiliate_commission), and makes the first
// message of each order its carrier: the carriers' rows are inserted, and
// a later message of the order answers as its delivery after the carrier
// would.
func (c *Consumers) commissionKeys(b *batch) {
	carried := map[string]bool{}
	for _, o := range b.orders {
		for _, it := range o.items {
			if it.done {
				continue
			}
			it.key = ledger.EntryKey(o.id.String(), ledger.EntryTypeCommission)
			if !carried[it.key] {
				carried[it.key], it.carries = true, true
			}
		}
	}
}
