package consumer

import (
	"errors"
	"fmt"

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
// batch: the orders locked in id order (OrderLockBatch: two batches that
// overlap lock them in one order and cannot deadlock), the state check and
// the transitions (batchStateCheck), then the reservations and the
// confirmations (batchFulfil). What it learns it writes into b; b is
// thrown away if the transaction fails.
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
		if err := c.batchStateCheck(b, q); err != nil {
			return err
		}
		return c.batchFulfil(b, tx)
	})
}

// batchStateCheck is the state check for the set: one UPDATE ... WHERE id
// = ANY($1) AND status = 'pending' RETURNING id. The orders it returns are
// applied (the first message of each; later messages of the same order
// already_applied), the rest were paid before (already_applied) or are
// refunded (not_applicable: terminal). Then the transitions of the moved
// orders, in one INSERT.
func (c *Consumers) batchStateCheck(b *batch, q *queries.Queries) error {
	paid := map[uuid.UUID][]step{}
	for _, o := range b.orders {
		if !o.known {
			continue
		}
		for _, it := range o.items {
			_, s := it.run.begin(it.ctx, effect.Paid, effect.StateCheck)
			paid[o.id] = append(paid[o.id], s)
		}
	}
	moved, err := q.OrderMarkPaidBatch(b.ctx, b.ids)
	if err != nil {
		return fmt.Errorf("mark %d orders paid: %w", len(b.ids), err)
	}
	for _, id := range moved {
		b.byID[id].moved = true
	}
	var t queries.OrderTransitionInsertBatchParams
	for _, o := range b.orders {
		if !o.known {
			continue
		}
		first := effect.AlreadyApplied
		switch {
		case o.moved:
			first = effect.Applied
			t.OrderIds = append(t.OrderIds, o.id)
			t.MessageIds = append(t.MessageIds, o.items[0].msg.UUID)
		case o.row.Status == order.StatusRefunded:
			first = effect.NotApplicable
		case o.row.Status != order.StatusPaid:
			return fmt.Errorf("order %s is %s under its lock, yet the state check did not move it", o.id, o.row.Status)
		}
		for i, s := range paid[o.id] {
			if i == 0 {
				s.end(first)
			} else {
				s.end(asLater(first))
			}
		}
		o.fulfil = o.row.Status != order.StatusRefunded && !o.row.RefundRequested
	}
	if len(t.OrderIds) == 0 {
		return nil
	}
	if err := q.OrderTransitionInsertBatch(b.ctx, t); err != nil {
		return fmt.Errorf("record the transitions of %d orders: %w", len(t.OrderIds), err)
	}
	return nil
}

// batchFulfil reserves the items of every order to fulfil, one order after
// another as HandleOrderPaid does (c.reserveStock; an order whose items
// are short is compensated instead, c.compensate), and writes the
// confirmation of every order the state check moved, all in one outbox
// write. The SKUs of the moved orders are locked first, in SKU order
// (StockLockForOrders), so that reserving order after order cannot take
// two SKUs against the order another transaction takes them in.
func (c *Consumers) batchFulfil(b *batch, tx pgx.Tx) error {
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
	var confirmations []*message.Message
	var enqueued []step
	for _, o := range b.orders {
		if !o.known || !o.fulfil {
			continue
		}
		lead := o.items[0]
		err := c.reserveStock(lead.ctx, lead.run, tx, o.id, lead.msg.UUID)
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
		o.stock = lastOutcome(lead.run, effect.StockReserved)
		for _, it := range o.items[1:] {
			_, s := it.run.begin(it.ctx, effect.StockReserved, effect.Reservation)
			s.end(asLater(o.stock))
		}
		if !o.moved {
			continue // confirmed when it moved
		}
		m, err := messages.NewOrderConfirmed(o.id)
		if err != nil {
			return err
		}
		ctx, s := lead.run.begin(lead.ctx, effect.ConfirmationEnqueued, effect.Outbox)
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

// batchReleaseCommission is step 2 of HandleOrderPaidBatch, one
// transaction for every order still to credit: their row locks in id order
// with each one's status and refund intent (OrderLockForCommissionBatch,
// as releaseCommissionIfPaid takes one), then one INSERT ... ON CONFLICT
// (entry_key) DO NOTHING RETURNING order_id for the orders still paid and
// not being refunded. RETURNING gives back only the rows inserted: those
// orders are applied, the others of the INSERT already_applied. An order
// refunded meanwhile, or with no commission to earn (no affiliate, or one
// that rounds to 0 cents, as releaseCommissionKeyedBy says), is
// not_applicable.
func (c *Consumers) batchReleaseCommission(b *batch) error {
	var ids []uuid.UUID
	var steps []step
	for _, o := range b.orders {
		if o.carrier == nil {
			continue
		}
		_, s := o.carrier.run.begin(o.carrier.ctx, effect.Commission, effect.LedgerKey)
		ids, steps = append(ids, o.id), append(steps, s)
	}
	if len(ids) == 0 {
		return nil
	}
	err := postgres.InTx(b.ctx, c.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		rows, err := q.OrderLockForCommissionBatch(b.ctx, ids)
		if err != nil {
			return fmt.Errorf("lock %d orders: %w", len(ids), err)
		}
		if len(rows) != len(ids) {
			return fmt.Errorf("lock %d orders: %d found", len(ids), len(rows))
		}
		var p queries.LedgerCommissionInsertBatchParams
		for _, r := range rows {
			o := b.byID[r.ID]
			if r.Status != order.StatusPaid || r.RefundRequested ||
				!o.row.AffiliateID.Valid || ledger.Commission(o.row.AmountCents) == 0 {
				o.commission = effect.NotApplicable
				continue
			}
			o.commission = effect.AlreadyApplied // unless RETURNING names it
			p.EntryKeys = append(p.EntryKeys, ledger.EntryKey(o.id.String(), ledger.EntryTypeCommission))
			p.OrderIds = append(p.OrderIds, o.id)
			p.AffiliateIds = append(p.AffiliateIds, o.row.AffiliateID.String)
			p.AmountCents = append(p.AmountCents, ledger.Commission(o.row.AmountCents))
			p.MessageIds = append(p.MessageIds, o.carrier.msg.UUID)
		}
		if len(p.OrderIds) == 0 {
			return nil
		}
		inserted, err := q.LedgerCommissionInsertBatch(b.ctx, p)
		if err != nil {
			return fmt.Errorf("insert the commissions of %d orders: %w", len(p.OrderIds), err)
		}
		for _, id := range inserted {
			b.byID[id].commission = effect.Applied
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, s := range steps {
		s.end(b.byID[ids[i]].commission)
	}
	return nil
}

// lastOutcome is the last answer run recorded for effectName ("" if none).
func lastOutcome(run *execution, effectName string) effect.Outcome {
	for i := len(run.results) - 1; i >= 0; i-- {
		if run.results[i].Effect == effectName {
			return run.results[i].Outcome
		}
	}
	return ""
}
