package consumer

import (
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/stock"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// batchMarkPaid is step 1 of HandleOrderPaidBatch, one transaction for the
// batch: the orders locked in id order (OrderLockBatch: id order is the
// order every batch takes order locks in, InOneTransaction's too, so
// batches that overlap wait for one another instead of deadlocking), then,
// in a statement of its own that sees a refund intent committed while a
// lock was awaited, which of them are being refunded
// (RefundRequestOrdersBatch); the state check and the transitions
// (batchStateCheck), then the reservations and the confirmations
// (batchFulfil). What it learns it writes into b; b is thrown away if the
// transaction fails.
func (c *Consumers) batchMarkPaid(b *batch) error {
	return postgres.InTx(b.ctx, c.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		rows, err := q.OrderLockBatch(b.ctx, b.ids)
		if err != nil {
			return fmt.Errorf("lock %d orders: %w", len(b.ids), err)
		}
		for _, r := range rows {
			o := b.byID[r.ID]
			o.row, o.known = r, true
		}
		refunding, err := q.RefundRequestOrdersBatch(b.ctx, b.ids)
		if err != nil {
			return fmt.Errorf("read the refunds of %d orders: %w", len(b.ids), err)
		}
		for _, id := range refunding {
			b.byID[id].refundRequested = true
		}
		if err := c.batchStateCheck(b, q); err != nil {
			return err
		}
		return c.batchFulfil(b, tx)
	})
}

// batchStateCheck is the state check for the set (order.MarkPaidBatch:
// one UPDATE ... WHERE id = ANY($1) AND status = 'pending' RETURNING id,
// and the transitions of the orders it moved). Of each order it moved the
// first message is applied, a later message already_applied, as its
// delivery after the first would be; the messages of the other orders find
// them paid (or refund_failed) before (already_applied) or refunded
// (not_applicable: terminal).
func (c *Consumers) batchStateCheck(b *batch, q *queries.Queries) error {
	var ids []uuid.UUID
	var leaders []string
	for _, o := range b.orders {
		if !o.known {
			continue
		}
		ids, leaders = append(ids, o.id), append(leaders, o.items[0].msg.UUID)
	}
	started := time.Now()
	moved, err := order.MarkPaidBatch(b.ctx, q, ids, leaders)
	if err != nil {
		return err
	}
	for _, o := range b.orders {
		if !o.known {
			continue
		}
		o.moved = moved[o.id]
		if !o.moved && o.row.Status == order.StatusPending {
			return fmt.Errorf("order %s is %s under its lock, yet the state check did not move it", o.id, o.row.Status)
		}
		for i, it := range o.items {
			outcome := effect.AlreadyApplied
			switch {
			case o.moved && i == 0:
				it.moved, outcome = true, effect.Applied
			case !o.moved && o.row.Status == order.StatusRefunded:
				outcome = effect.NotApplicable
			}
			it.run.Answer(it.ctx, effect.Paid, effect.StateCheck, outcome, started)
		}
		o.fulfil = o.row.Status != order.StatusRefunded && !o.refundRequested
	}
	return nil
}

// batchFulfil reserves the items of every order to fulfil
// (reserveOrdersStock; an order whose items are short is compensated
// instead) and enqueues the confirmation of every message that moved an
// order to fulfil, all in one outbox write (enqueueConfirmationsBatch).
func (c *Consumers) batchFulfil(b *batch, tx pgx.Tx) error {
	if err := c.reserveOrdersStock(b, tx); err != nil {
		return err
	}
	var moved []*batchItem
	for _, o := range b.orders {
		if !o.known || !o.fulfil {
			continue
		}
		for _, it := range o.items {
			if it.moved {
				moved = append(moved, it)
			}
		}
	}
	return c.enqueueConfirmationsBatch(b, tx, moved)
}

// enqueueConfirmationsBatch writes the confirmation of each message of
// moved (the messages that moved an order to fulfil) to the outbox in tx,
// step 1's transaction, in one write, each as its message's step
// "confirmation_enqueued".
func (c *Consumers) enqueueConfirmationsBatch(b *batch, tx pgx.Tx, moved []*batchItem) error {
	if len(moved) == 0 {
		return nil
	}
	var confirmations []*message.Message
	for _, it := range moved {
		m, err := messages.NewOrderConfirmed(it.run.OrderID.UUID)
		if err != nil {
			return err
		}
		// The confirmation continues its own order's trace. outbox.Publish
		// runs below under b.ctx, which holds no span, and so leaves this
		// trace context in place.
		telemetry.InjectMessage(it.ctx, m)
		confirmations = append(confirmations, m)
	}
	started := time.Now()
	if err := outbox.Publish(b.ctx, tx, messages.TopicOrderConfirmed, confirmations...); err != nil {
		return err
	}
	for _, it := range moved {
		it.run.Answer(it.ctx, effect.ConfirmationEnqueued, effect.Outbox, effect.Applied, started)
	}
	return nil
}

// reserveOrdersStock reserves the items of every order to fulfil, one
// order after another as HandleOrderPaid does (stock.Reserve: the
// reservation row, then the guarded decrement), as its first message's
// step; the later messages of the order answer what their deliveries
// would, already_applied. An order whose items are short is compensated
// instead (c.compensate) and not fulfilled. The SKUs of the moved orders
// are locked first, in SKU order (StockLockForOrders), so that reserving
// order after order cannot take two SKUs against the order another
// transaction takes them in.
func (c *Consumers) reserveOrdersStock(b *batch, tx pgx.Tx) error {
	var moved []uuid.UUID
	for _, o := range b.orders {
		if o.moved && o.fulfil {
			moved = append(moved, o.id)
		}
	}
	if len(moved) > 0 {
		if _, err := queries.New(tx).StockLockForOrders(b.ctx, moved); err != nil {
			return fmt.Errorf("lock the stock of %d orders: %w", len(moved), err)
		}
	}
	for _, o := range b.orders {
		if !o.known || !o.fulfil {
			continue
		}
		lead := o.items[0]
		ctx, step := lead.run.Begin(lead.ctx, effect.StockReserved, effect.Reservation)
		outcome, err := stock.Reserve(ctx, tx, o.id, lead.msg.UUID)
		err = step.Answer(outcome, err)
		if errors.Is(err, stock.ErrOutOfStock) {
			o.fulfil = false
			if err := c.compensate(lead.ctx, lead.run, tx, o.id, err); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		o.stock = outcome
		for _, it := range o.items[1:] {
			it.run.Answer(it.ctx, effect.StockReserved, effect.Reservation, asLater(o.stock), time.Now())
		}
	}
	return nil
}

// batchReleaseCommission is step 2 of HandleOrderPaidBatch, one
// transaction for every order still to credit: which of them are still paid
// and not being refunded, under their row locks (ledger.CommissionDueBatch,
// as releaseCommissionIfPaid asks ledger.CommissionDue for one); then one INSERT ... ON CONFLICT
// (entry_key) DO NOTHING RETURNING entry_key for the orders still paid and
// not being refunded, one row per key a message carries (commissionKeys).
// RETURNING gives back only the keys inserted: those are applied, the
// others of the INSERT already_applied. An order refunded meanwhile, or
// with no commission to earn (no affiliate, or one that rounds to 0
// cents, as releaseCommissionKeyedBy says), is not_applicable.
func (c *Consumers) batchReleaseCommission(b *batch) error {
	var ids []uuid.UUID
	var carriers []*batchItem
	for _, o := range b.orders {
		for _, it := range o.items {
			if it.done || !it.carries {
				continue
			}
			if len(ids) == 0 || ids[len(ids)-1] != o.id {
				ids = append(ids, o.id)
			}
			carriers = append(carriers, it)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	started := time.Now()
	err := postgres.InTx(b.ctx, c.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		due, err := ledger.CommissionDueBatch(b.ctx, q, ids)
		if err != nil {
			return err
		}
		var cs []ledger.BatchCommission
		for _, it := range carriers {
			o := b.byID[it.run.OrderID.UUID]
			if !due[o.id] {
				b.commission[it.key] = effect.NotApplicable
				continue
			}
			cs = append(cs, ledger.BatchCommission{Key: it.key, OrderID: o.id, AffiliateID: o.row.AffiliateID,
				AmountCents: o.row.AmountCents, MessageID: it.msg.UUID})
		}
		outcomes, err := ledger.ReleaseCommissionBatch(b.ctx, q, cs)
		if err != nil {
			return err
		}
		for key, outcome := range outcomes {
			b.commission[key] = outcome
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, it := range carriers {
		it.run.Answer(it.ctx, effect.Commission, effect.LedgerKey, b.commission[it.key], started)
	}
	return nil
}

// asLater is the answer a later message of an order gets for a step whose
// first message got o: what it would get delivered after it.
func asLater(o effect.Outcome) effect.Outcome {
	if o == effect.Applied {
		return effect.AlreadyApplied
	}
	return o
}
