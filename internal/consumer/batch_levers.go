package consumer

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/levers"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// This file is where the lab's levers reach the batch handlers
// (HandleOrderPaidBatch, HandleOrderConfirmedBatch), as levers.go is for
// the per-message ones. Each guarded step of a batch calls a method below:
// it runs the guard's set-based statement or, with that guard switched
// off, the mistake the per-message path makes, set-based too: the
// statement loses the WHERE or the key that is the guard. Every other
// guard stays on in its set-based form, so a batch with guard X off does
// exactly the damage HandleOrderPaid or HandleOrderConfirmed does without
// X, and no other.
//
// A batch dedupes before its statements (by order for order_paid, by
// message id for order_confirmed): the first message gets the guards'
// answers, every later one already_applied. That dedupe is a guard's
// answer, so it goes with the guard: without the state check every message
// of an order moves it again; without the ledger key each message keys its
// own commission; without the inbox every copy of a message calls the
// provider. One guard alone sends a batch to the per-message path, the
// provider's key (providerKeyOff says why); the api's guards
// (webhook-inbox, idempotency-key, charge-claim) are no consumer's and
// change nothing here.

// markPaidBatch is the state check for the set, OrderMarkPaidBatch (UPDATE
// ... WHERE id = ANY($1) AND status = 'pending' RETURNING id): of each
// order it returns, the first message moved it; the later messages of the
// order, and every message of an order it did not return, moved nothing.
//
// With levers.StateCheck off, OrderMarkPaidBatchUnguarded: the same UPDATE
// without AND status = 'pending', the set form of order.MarkPaidUnguarded.
// Every order that exists moves, a paid or refunded one too (it is paid
// again, no longer refunded), and not once: every message of it moves it,
// as each would one by one, so the dedupe by order hides no transition,
// nor the confirmation each transition enqueues.
func (c *Consumers) markPaidBatch(b *batch, q *queries.Queries) error {
	if c.levers.Off(levers.StateCheck) {
		moved, err := q.OrderMarkPaidBatchUnguarded(b.ctx, b.ids)
		if err != nil {
			return fmt.Errorf("mark %d orders paid (no state check): %w", len(b.ids), err)
		}
		for _, id := range moved {
			o := b.byID[id]
			o.moved, o.row.Status = true, order.StatusPaid
			for _, it := range o.items {
				it.moved = true
			}
		}
		return nil
	}
	moved, err := q.OrderMarkPaidBatch(b.ctx, b.ids)
	if err != nil {
		return fmt.Errorf("mark %d orders paid: %w", len(b.ids), err)
	}
	for _, id := range moved {
		o := b.byID[id]
		o.moved, o.items[0].moved = true, true
	}
	return nil
}

// reserveStockBatch takes the items of every order to fulfil out of stock,
// in tx: reserveOrdersStock, each order once under its reservation rows.
//
// With levers.StockReservation off, the naive counter of
// stock.ReserveUnguarded, set-based: every message of every order to
// fulfil takes the order's items again, in one UPDATE per set
// (StockTakeUnguardedBatch: the counter loses the items of each delivery,
// with no reservation row to meet), and writes one 'reserve' movement
// (StockMovementReserveBatch). As one by one, a short order is never
// compensated: the counter stops at 0 instead.
func (c *Consumers) reserveStockBatch(b *batch, tx pgx.Tx) error {
	if !c.levers.Off(levers.StockReservation) {
		return c.reserveOrdersStock(b, tx)
	}
	var orders []uuid.UUID // distinct, for the SKU locks
	var p queries.StockMovementReserveBatchParams
	var taking []*batchItem
	var steps []step
	for _, o := range b.orders {
		if !o.known || !o.fulfil {
			continue
		}
		orders = append(orders, o.id)
		for _, it := range o.items {
			_, s := it.run.begin(it.ctx, effect.StockReserved, effect.Reservation)
			p.OrderIds = append(p.OrderIds, o.id)
			p.MessageIds = append(p.MessageIds, it.msg.UUID)
			taking, steps = append(taking, it), append(steps, s)
		}
	}
	if len(taking) == 0 {
		return nil
	}
	q := queries.New(tx)
	// In SKU order first, as the guarded path does: the UPDATE's own row
	// order is not one another transaction could agree with.
	if _, err := q.StockLockForOrders(b.ctx, orders); err != nil {
		return fmt.Errorf("lock the stock of %d orders: %w", len(orders), err)
	}
	if err := q.StockTakeUnguardedBatch(b.ctx, p.OrderIds); err != nil {
		return fmt.Errorf("take the items of %d deliveries (no reservation): %w", len(p.OrderIds), err)
	}
	took, err := q.StockMovementReserveBatch(b.ctx, p)
	if err != nil {
		return fmt.Errorf("record the takes of %d deliveries: %w", len(p.OrderIds), err)
	}
	hasItems := map[uuid.UUID]bool{}
	for _, id := range took {
		hasItems[id] = true
	}
	for i, it := range taking {
		if hasItems[it.run.orderID.UUID] {
			steps[i].end(effect.Applied)
		} else {
			steps[i].end(effect.NotApplicable) // the order has no items
		}
	}
	return nil
}

// enqueueConfirmationsBatch writes the confirmation of each message of
// moved (the messages that moved an order to fulfil) to the outbox in tx,
// step 1's transaction, in one write, each as its message's step
// "confirmation_enqueued".
//
// With levers.Outbox off it writes nothing, and keeps the confirmations
// for publishBatchIfOutboxOff, after the commit: the mistake, as
// enqueueConfirmation and publishIfOutboxOff make it one by one.
func (c *Consumers) enqueueConfirmationsBatch(b *batch, tx pgx.Tx, moved []*batchItem) error {
	if len(moved) == 0 {
		return nil
	}
	outboxOff := c.levers.Off(levers.Outbox)
	var confirmations []*message.Message
	var enqueued []step
	for _, it := range moved {
		m, err := messages.NewOrderConfirmed(it.run.orderID.UUID)
		if err != nil {
			return err
		}
		if outboxOff {
			it.confirmation = m
			b.unsent = append(b.unsent, it)
			continue
		}
		ctx, s := it.run.begin(it.ctx, effect.ConfirmationEnqueued, effect.Outbox)
		// The confirmation continues its own order's trace. outbox.Publish
		// runs below under b.ctx, which holds no span, and so leaves this
		// trace context in place.
		telemetry.InjectMessage(ctx, m)
		confirmations, enqueued = append(confirmations, m), append(enqueued, s)
	}
	if len(confirmations) == 0 {
		return nil
	}
	if err := outbox.Publish(b.ctx, tx, messages.TopicOrderConfirmed, confirmations...); err != nil {
		return err
	}
	for _, s := range enqueued {
		s.end(effect.Applied)
	}
	return nil
}

// publishBatchIfOutboxOff does nothing unless enqueueConfirmationsBatch
// kept confirmations back (levers.Outbox off). Then it is the mistake the
// outbox prevents, for the set: once step 1 has committed and the fault
// point between the steps has fired, it publishes the confirmations of the
// messages still standing straight to the broker, in one call. A crash
// before it loses them for good: their orders are paid, and no
// redelivery will move them again to send them. A message whose
// confirmation the broker refused answers that error.
func (c *Consumers) publishBatchIfOutboxOff(b *batch) {
	var sending []*batchItem
	var msgs []*message.Message
	for _, it := range b.unsent {
		if it.done { // the fault point failed it: its confirmation is lost
			continue
		}
		telemetry.InjectMessage(it.ctx, it.confirmation)
		sending, msgs = append(sending, it), append(msgs, it.confirmation)
	}
	if len(msgs) == 0 {
		return
	}
	if err := c.direct.Publish(messages.TopicOrderConfirmed, msgs...); err != nil {
		err = fmt.Errorf("publish %d to %s: %w", len(msgs), messages.TopicOrderConfirmed, err)
		for _, it := range sending {
			c.finish(it, err)
		}
	}
}

// commissionKeys gives each message still standing after step 1 the
// ledger key its commission is inserted under in step 2, and makes the
// first message of the batch holding each key its carrier: the carriers'
// rows are inserted, and a later message holding the same key answers as
// its delivery after the carrier would. With the ledger key on, the key is
// the business key, ledger.EntryKey(order id, affiliate_commission): one
// per order, so one message of each order carries it.
//
// With levers.LedgerKey off, the delivery's key, "delivery:<message id>",
// as ledger.ReleaseCommissionUnguarded writes it: each message of an order
// carries its own key, and the one INSERT credits the order once per
// message. Only the copies of one message share a key, and credit once.
func (c *Consumers) commissionKeys(b *batch) {
	byDelivery := c.levers.Off(levers.LedgerKey)
	carried := map[string]bool{}
	for _, o := range b.orders {
		for _, it := range o.items {
			if it.done {
				continue
			}
			it.key = ledger.EntryKey(o.id.String(), ledger.EntryTypeCommission)
			if byDelivery {
				it.key = ledger.DeliveryKey(it.msg.UUID)
			}
			if !carried[it.key] {
				carried[it.key], it.carries = true, true
			}
		}
	}
}

// inboxSeenBatch is c.inboxSeen for a batch: which of ids (each once) the
// consumer handled before, in one look-up (ConsumerInboxSeenBatch), and
// dedupe true: a later copy of a message in the batch is answered from its
// first copy, as the inbox would answer its redelivery.
//
// With levers.Inbox off it looks nothing up and answers nothing seen, and
// dedupe false: the dedupe of the copies is the inbox's answer too, so it
// goes with it. Every delivery calls the provider, each copy of a message
// after the one before it, as its redelivery would.
func (c *Consumers) inboxSeenBatch(ctx context.Context, ids []string) (seen map[string]bool, dedupe bool, err error) {
	if c.levers.Off(levers.Inbox) {
		return map[string]bool{}, false, nil
	}
	got, err := c.q.ConsumerInboxSeenBatch(ctx, queries.ConsumerInboxSeenBatchParams{Consumer: HandlerOrderConfirmed, MessageIds: ids})
	if err != nil {
		return nil, false, fmt.Errorf("check inbox: %w", err)
	}
	seen = map[string]bool{}
	for _, id := range got {
		seen[id] = true
	}
	return seen, true, nil
}

// providerKeyOff reports whether levers.ProviderKey is off: then
// HandleOrderConfirmedBatch hands its messages to HandleOrderConfirmed one
// by one, the only fallback of the batch handlers. The key is the
// notifier's own lever (notify.Client.Send sends a fresh key per call),
// which the batch does not touch; what the batch changes is when an
// answer is recorded: its log and inbox rows are written after all its
// calls, HandleOrderConfirmed's after each. With the key that is safe: a
// crash before the record repeats the calls under their keys, and the
// provider sends nothing again. Without it, a crash in the middle of a
// batch would send again every e-mail of the batch not yet recorded, not
// only the one in flight: a larger damage than the mistake shows one by
// one (scenarios worker-restart and graceful-restart), so no set-based
// form of it would be the same mistake.
func (c *Consumers) providerKeyOff() bool { return c.levers.Off(levers.ProviderKey) }
