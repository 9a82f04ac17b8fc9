package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/refund"
	"github.com/orderpaid/orderpaid/internal/stock"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// HandleOrderPaid consumes order_paid in two steps, each in its own
// transaction, each protected by its own guard:
//
//  1. mark the order paid (state check), take its items out of stock
//     (reservation row and guarded decrement) and, in the same transaction,
//     write order_confirmed to the outbox: the confirmation exists exactly
//     when the transition happened;
//  2. release the affiliate commission (unique ledger key), under the
//     order's row lock, only while the order is paid and no refund of it
//     was asked (releaseCommissionIfPaid).
//
// A refunded order is terminal (order.MarkRefunded): an order_paid that
// arrives after its refund (the provider does not promise order) finds it,
// the state check answers not_applicable, and nothing else is applied: no
// stock, no confirmation, no commission.
//
// An order whose items are short cannot be fulfilled, and its customer has
// paid: the order is compensated. Step 1 records its refund
// (refund.Compensate: the order's one refund intent and its
// refund_requested message, in the same transaction) instead of the
// reservation and the confirmation; the consumer of refund_requested gives
// the money back and tells the customer. A redelivery, even after the stock
// was refilled, meets the refund intent and applies nothing more.
//
// A failure between the steps is a real partial failure: the message is
// redelivered, step 1 answers AlreadyApplied and step 2 completes the work.
//
// Each guarded step is a span "effect <name>" (run.begin ... end) carrying
// the guard's answer, under the delivery's consumer span. The steps are
// c.markPaid, c.reserveStock, c.enqueueConfirmation and c.releaseCommission
// (levers.go): each is its guard unless the lab switched it off.
func (c *Consumers) HandleOrderPaid(msg *message.Message) error {
	ctx := msg.Context()
	run := c.newExecution(HandlerOrderPaid, msg.UUID)
	p, err := messages.DecodeOrderPaid(msg.Payload)
	if err != nil {
		return c.record(ctx, run, permanent(err))
	}
	run.orderID = uuid.NullUUID{UUID: p.OrderID, Valid: true}
	ctx = telemetry.WithOrderID(ctx, p.OrderID.String())

	var o queries.Order
	var confirmation *message.Message
	fulfil := true // false: refunded, or being refunded
	err = postgres.InTx(ctx, c.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		paidCtx, paid := run.begin(ctx, effect.Paid, effect.StateCheck)
		outcome, ord, err := c.markPaid(paidCtx, q, p.OrderID, msg.UUID)
		if err != nil {
			return err
		}
		o = ord
		paid.end(outcome)
		if o.Status == order.StatusRefunded {
			fulfil = false
			return nil // terminal: a late payment event applies nothing
		}
		if _, err := q.RefundRequestGet(ctx, o.ID); err == nil {
			fulfil = false
			return nil // being refunded: nothing to fulfil
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read the refund of order %s: %w", o.ID, err)
		}
		err = c.reserveStock(ctx, run, tx, o.ID, msg.UUID)
		if errors.Is(err, stock.ErrOutOfStock) {
			fulfil = false
			return c.compensate(ctx, run, tx, o.ID, err)
		}
		if err != nil {
			return err
		}
		if outcome != effect.Applied {
			return nil
		}
		if confirmation, err = messages.NewOrderConfirmed(o.ID); err != nil {
			return err
		}
		return c.enqueueConfirmation(ctx, run, tx, confirmation)
	})
	if errors.Is(err, order.ErrNotFound) {
		return c.record(ctx, run, permanent(fmt.Errorf("order_paid for unknown order %s: %w", p.OrderID, err)))
	}
	if err != nil {
		return c.record(ctx, run, fmt.Errorf("step 1, mark paid: %w", err))
	}
	if err := c.levers.Hit(FaultAfterMarkPaid); err != nil {
		return c.record(ctx, run, err)
	}
	if err := c.publishIfOutboxOff(ctx, messages.TopicOrderConfirmed, confirmation); err != nil {
		return c.record(ctx, run, err)
	}
	if !fulfil {
		return c.record(ctx, run, nil) // no commission for an order given back
	}

	releaseCtx, commission := run.begin(ctx, effect.Commission, effect.LedgerKey)
	outcome, err := c.releaseCommissionIfPaid(releaseCtx, o, msg.UUID)
	if err != nil {
		return c.record(ctx, run, fmt.Errorf("step 2, release commission: %w", err))
	}
	commission.end(outcome)

	return c.record(ctx, run, c.levers.Hit(FaultBeforeAck))
}

// compensate records the refund of an order whose items are short (short,
// the error that said so), in tx, as the guarded step "refund_requested"
// of run.
func (c *Consumers) compensate(ctx context.Context, run *execution, tx pgx.Tx, orderID uuid.UUID, short error) error {
	ctx, requested := run.begin(ctx, effect.RefundRequested, effect.IntentRow)
	outcome, err := refund.Compensate(ctx, tx, orderID)
	if err != nil {
		return fmt.Errorf("compensate order %s (%w): %w", orderID, short, err)
	}
	requested.end(outcome)
	return nil
}

// releaseCommissionIfPaid is step 2: in one transaction, it takes the
// order's row lock and releases the commission only if the order is still
// paid and no refund of it was asked. MarkRefunded and the refund request
// take the same lock, so a refund and this step never interleave: a refund
// committed first leaves nothing to credit (NotApplicable), a commission
// committed first is there for the refund to reverse. Without the lock, a
// refund could look for the commission to reverse, find none, and commit
// just before this step credits it: a commission for a refunded order, and
// nothing left to reverse it. The refund intent is read after the lock, in
// a statement of its own (RefundRequestExists): one that committed while
// the lock was awaited is not in the snapshot of the statement that waited.
func (c *Consumers) releaseCommissionIfPaid(ctx context.Context, o queries.Order, messageID string) (effect.Outcome, error) {
	var outcome effect.Outcome
	err := postgres.InTx(ctx, c.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		status, err := q.OrderLockForCommission(ctx, o.ID)
		if err != nil {
			return fmt.Errorf("lock order %s: %w", o.ID, err)
		}
		refundRequested, err := q.RefundRequestExists(ctx, o.ID)
		if err != nil {
			return fmt.Errorf("read the refund of order %s: %w", o.ID, err)
		}
		if status != order.StatusPaid || refundRequested {
			outcome = effect.NotApplicable
			return nil
		}
		outcome, err = c.releaseCommission(ctx, q, o, messageID)
		return err
	})
	return outcome, err
}
