package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// HandleOrderPaidBatch consumes several order_paid messages with the set
// forms of HandleOrderPaid's guards (batch_steps.go) and returns one error
// per message, in msgs' order: nil acks it, a permanent error poisons it
// alone, any other asks for its redelivery. The batch is deduped by order
// (the first message of an order gets the guards' answers, a later one
// already_applied); then HandleOrderPaid's two steps, each one transaction
// for the whole batch. Each message keeps its own execution, spans and
// counters. A failure no one message can be blamed for rolls the batch
// back; the batch is then split in halves, recursively, so that a bad
// message ends up alone and its neighbours commit. With a guard switched
// off the lab runs the messages one at a time instead
// (docs/techniques/guards-in-bulk.md).
func (c *Consumers) HandleOrderPaidBatch(msgs []*message.Message) []error {
	errs := make([]error, len(msgs))
	if len(msgs) == 0 {
		return errs
	}
	b := c.newBatch(msgs)
	failure := c.applyBatch(b)
	var again []*message.Message // the messages failure left without an answer
	var at []int
	for i, it := range b.items {
		if it.done {
			errs[i] = it.err
			continue
		}
		_ = c.record(it.ctx, it.run, fmt.Errorf("order_paid batch of %d: %w", len(msgs), failure))
		again, at = append(again, msgs[i]), append(at, i)
	}
	if len(again) == 0 {
		return errs
	}
	if len(msgs) == 1 || b.ctx.Err() != nil { // alone, or shutting down: splitting cannot help
		for _, i := range at {
			errs[i] = fmt.Errorf("order_paid batch: %w", failure)
		}
		return errs
	}
	half := len(again) / 2
	answers := append(c.HandleOrderPaidBatch(again[:half]), c.HandleOrderPaidBatch(again[half:])...)
	for k, i := range at {
		errs[i] = answers[k]
	}
	return errs
}

// batch is one attempt at a batch: its messages, and its distinct orders.
type batch struct {
	// ctx carries the cancellation of the delivery and the batch's span
	// (telemetry.BatchContext): a statement for the whole batch belongs to
	// no one message's trace. Each message's steps run under its own
	// context (batchItem.ctx).
	ctx    context.Context
	items  []*batchItem  // in msgs' order
	orders []*batchOrder // distinct, in the order of their first message
	byID   map[uuid.UUID]*batchOrder
	ids    []uuid.UUID // the orders' ids, for the statements
	// commission is step 2's answer for each ledger key.
	commission map[string]effect.Outcome
}

// batchItem is one message of a batch and its execution.
type batchItem struct {
	msg *message.Message
	ctx context.Context // the message's own, with its order id
	run *telemetry.Run
	// moved: this message moved its order to paid (the state check's
	// applied): it records the transition and enqueues the confirmation.
	moved bool
	// key is the ledger key of the commission this message credits in step
	// 2 (commissionKeys); carries: it is the first message of the batch
	// holding that key, and its row is the one inserted.
	key     string
	carries bool
	// done: err is the message's answer, and its execution is recorded.
	done bool
	err  error
}

// batchOrder is one order of a batch and what its guards answered.
type batchOrder struct {
	id uuid.UUID
	// items are the order's messages in batch order. The first leads: it
	// applies the effects, and the later ones answer as later deliveries.
	items []*batchItem
	row   queries.OrderLockBatchRow
	known bool // the order exists (row was read)
	moved bool // the state check moved it now (one of its items moved)
	// fulfil: paid, not being refunded, not compensated; step 2 is for it.
	fulfil bool
	// stock is the leader's stock_reserved answer ("" when none).
	stock effect.Outcome
	// refundRequested: a refund of it was asked, read once it was locked.
	refundRequested bool
}

// newBatch decodes msgs and groups them by order. A message that cannot be
// decoded is answered at once: permanent, for it alone.
func (c *Consumers) newBatch(msgs []*message.Message) *batch {
	b := &batch{
		ctx:        telemetry.BatchContext(msgs[0].Context()),
		byID:       map[uuid.UUID]*batchOrder{},
		commission: map[string]effect.Outcome{},
	}
	for _, m := range msgs {
		it := &batchItem{msg: m, ctx: m.Context(), run: c.newExecution(HandlerOrderPaid, m.UUID)}
		b.items = append(b.items, it)
		p, err := messages.DecodeOrderPaid(m.Payload)
		if err != nil {
			c.finish(it, permanent(err))
			continue
		}
		it.run.OrderID = uuid.NullUUID{UUID: p.OrderID, Valid: true}
		it.ctx = telemetry.WithOrderID(it.ctx, p.OrderID.String())
		o, ok := b.byID[p.OrderID]
		if !ok {
			o = &batchOrder{id: p.OrderID}
			b.byID[p.OrderID] = o
			b.orders = append(b.orders, o)
			b.ids = append(b.ids, p.OrderID)
		}
		o.items = append(o.items, it)
	}
	return b
}

// finish records the execution of it with err as its answer.
func (c *Consumers) finish(it *batchItem, err error) {
	it.err, it.done = c.record(it.ctx, it.run, err), true
}

// applyBatch runs both steps. An error it returns belongs to no message in
// particular: the messages it did not finish are to be tried again.
func (c *Consumers) applyBatch(b *batch) error {
	if len(b.orders) == 0 {
		return nil
	}
	if err := c.batchMarkPaid(b); err != nil {
		return fmt.Errorf("step 1, mark paid: %w", err)
	}
	c.afterMarkPaid(b)
	c.commissionKeys(b)
	if err := c.batchReleaseCommission(b); err != nil {
		return fmt.Errorf("step 2, release commission: %w", err)
	}
	for _, o := range b.orders {
		for _, it := range o.items {
			if it.done {
				continue
			}
			if !it.carries { // a later message holding the carrier's key
				it.run.Answer(it.ctx, effect.Commission, effect.LedgerKey, asLater(b.commission[it.key]), time.Now())
			}
			c.finish(it, c.faults.Hit(FaultBeforeAck))
		}
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

// afterMarkPaid answers, once step 1 has committed, the messages that have
// nothing left to do (unknown, refunded, being refunded or compensated
// orders), and fires the fault point between the steps for each message.
// The messages it leaves standing are for step 2.
func (c *Consumers) afterMarkPaid(b *batch) {
	for _, o := range b.orders {
		for _, it := range o.items {
			if !o.known {
				c.finish(it, permanent(fmt.Errorf("order_paid for unknown order %s: %w", o.id, order.ErrNotFound)))
				continue
			}
			switch err := c.faults.Hit(FaultAfterMarkPaid); {
			case err != nil:
				c.finish(it, err)
			case !o.fulfil:
				c.finish(it, nil) // nothing to credit for an order given back
			}
		}
	}
}
