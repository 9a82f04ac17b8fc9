package consumer

import (
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
//  2. release the affiliate commission (unique ledger key).
//
// A refunded order is terminal (order.MarkRefunded): an order_paid that
// arrives after its refund (the provider does not promise order) finds it,
// the state check answers not_applicable, and nothing else is applied: no
// stock, no confirmation, no commission.
//
// An order whose items are short cannot be fulfilled: step 1 fails for good
// (stock.ErrOutOfStock), nothing of it is applied, and the message goes to
// the poison queue with that reason, for an operator to see; replaying it
// (orderpaid reprocess --poison) after the stock is refilled runs it again.
//
// A failure between the steps is a real partial failure: the message is
// redelivered, step 1 answers AlreadyApplied and step 2 completes the work.
//
// Each guarded step is a span "effect <name>" (run.begin ... end) carrying
// the guard's answer, under the delivery's consumer span. The steps are
// c.markPaid, c.enqueueConfirmation and c.releaseCommission (levers.go):
// each is its guard (order.MarkPaid, outbox.Publish in the transition's
// transaction, ledger.ReleaseCommission) unless the lab switched it off.
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
	err = postgres.InTx(ctx, c.pool, func(tx pgx.Tx) error {
		paidCtx, paid := run.begin(ctx, effect.Paid, effect.StateCheck)
		outcome, ord, err := c.markPaid(paidCtx, queries.New(tx), p.OrderID, msg.UUID)
		if err != nil {
			return err
		}
		o = ord
		paid.end(outcome)
		if o.Status == order.StatusRefunded {
			return nil // terminal: a late payment event applies nothing
		}
		if err := c.reserveStock(ctx, run, tx, o.ID, msg.UUID); err != nil {
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
	if errors.Is(err, stock.ErrOutOfStock) {
		return c.record(ctx, run, permanent(fmt.Errorf("step 1, reserve stock: %w", err)))
	}
	if err != nil {
		return c.record(ctx, run, fmt.Errorf("step 1, mark paid: %w", err))
	}
	if err := c.levers.Hit(FaultAfterMarkPaid); err != nil {
		return c.record(ctx, run, err)
	}
	if err := c.publishIfOutboxOff(ctx, confirmation); err != nil {
		return c.record(ctx, run, err)
	}
	if o.Status == order.StatusRefunded {
		// Refunded before this payment event arrived: no commission for it.
		return c.record(ctx, run, nil)
	}

	releaseCtx, commission := run.begin(ctx, effect.Commission, effect.LedgerKey)
	outcome, err := c.releaseCommission(releaseCtx, o, msg.UUID)
	if err != nil {
		return c.record(ctx, run, fmt.Errorf("step 2, release commission: %w", err))
	}
	commission.end(outcome)

	return c.record(ctx, run, c.levers.Hit(FaultBeforeAck))
}
