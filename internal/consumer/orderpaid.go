package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/stock"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// HandleOrderPaid consumes order_paid in two steps, each in its own
// transaction, each effect under its own guard:
//
//  1. markPaid: mark the order paid (the state check), reserve its stock
//     (the reservation rows) and write order_confirmed to the outbox;
//  2. release the affiliate commission (the ledger key), only while the
//     order is paid and no refund was asked (releaseCommissionIfPaid).
//
// A failure between the steps is redelivered: step 1 answers already_applied
// and step 2 completes the work. A refunded order applies nothing.
func (c *Consumers) HandleOrderPaid(msg *message.Message) error {
	ctx, run := msg.Context(), c.newExecution(HandlerOrderPaid, msg.UUID)
	p, err := messages.DecodeOrderPaid(msg.Payload)
	if err != nil {
		return c.record(ctx, run, permanent(err))
	}
	ctx = run.ForOrder(ctx, p.OrderID)

	o, fulfil, err := c.markPaid(ctx, run, p.OrderID, msg.UUID)
	if errors.Is(err, order.ErrNotFound) {
		return c.record(ctx, run, permanent(fmt.Errorf("order_paid for unknown order %s: %w", p.OrderID, err)))
	}
	if err != nil {
		return c.record(ctx, run, fmt.Errorf("step 1, mark paid: %w", err))
	}
	if err := c.faults.Hit(FaultAfterMarkPaid); err != nil {
		return c.record(ctx, run, err)
	}
	if !fulfil {
		return c.record(ctx, run, nil) // no commission for an order given back
	}

	cctx, step := run.Begin(ctx, effect.Commission, effect.LedgerKey)
	released, err := c.releaseCommissionIfPaid(cctx, o, msg.UUID)
	if err = step.Answer(released, err); err != nil {
		return c.record(ctx, run, fmt.Errorf("step 2, release commission: %w", err))
	}
	return c.record(ctx, run, c.faults.Hit(FaultBeforeAck))
}

// markPaid is step 1 of HandleOrderPaid, one transaction: the state check,
// then, for an order to fulfil, its stock and, if the check applied, its
// confirmation. fulfil is false for an order refunded, being refunded, or
// short of items (compensated here: its refund intent and refund_requested).
func (c *Consumers) markPaid(ctx context.Context, run *telemetry.Run, orderID uuid.UUID, messageID string) (o queries.Order, fulfil bool, err error) {
	tx, err := postgres.Begin(ctx, c.pool)
	if err != nil {
		return o, false, err
	}
	defer postgres.End(ctx, tx, &err)
	q := queries.New(tx)
	sctx, step := run.Begin(ctx, effect.Paid, effect.StateCheck)
	paid, o, err := c.guards.MarkPaid(sctx, q, orderID, messageID)
	if err = step.Answer(paid, err); err != nil {
		return o, false, err
	}
	if fulfil, err = fulfils(ctx, q, o); err != nil || !fulfil {
		return o, fulfil, err
	}
	sctx, step = run.Begin(ctx, effect.StockReserved, effect.Reservation)
	reserved, err := c.guards.ReserveStock(sctx, tx, o.ID, messageID)
	if errors.Is(err, stock.ErrOutOfStock) {
		step.Fail(err)
		return o, false, c.compensate(ctx, run, tx, o.ID, err)
	}
	if err = step.Answer(reserved, err); err != nil || paid != effect.Applied {
		return o, true, err
	}
	return o, true, c.enqueueConfirmation(ctx, run, tx, o.ID)
}

// fulfils reports whether paid order o is to be fulfilled: no refund asked.
func fulfils(ctx context.Context, q *queries.Queries, o queries.Order) (bool, error) {
	if o.Status == order.StatusRefunded {
		return false, nil
	}
	asked, err := q.RefundRequestExists(ctx, o.ID)
	if err != nil {
		return false, fmt.Errorf("read the refund of order %s: %w", o.ID, err)
	}
	return !asked, nil // being refunded: nothing to fulfil
}

// enqueueConfirmation writes order_confirmed for the order to the outbox, in
// tx, the transition's transaction: the guarded step "confirmation_enqueued".
func (c *Consumers) enqueueConfirmation(ctx context.Context, run *telemetry.Run, tx pgx.Tx, orderID uuid.UUID) error {
	confirmation, err := messages.NewOrderConfirmed(orderID)
	if err != nil {
		return err
	}
	ctx, step := run.Begin(ctx, effect.ConfirmationEnqueued, effect.Outbox)
	return step.Answer(effect.Applied, c.guards.Enqueue(ctx, tx, messages.TopicOrderConfirmed, confirmation))
}

// releaseCommissionIfPaid is step 2, one transaction: under the order's row
// lock, shared with refunds, only while it is due (ledger.CommissionDue).
func (c *Consumers) releaseCommissionIfPaid(ctx context.Context, o queries.Order, messageID string) (_ effect.Outcome, err error) {
	tx, err := postgres.Begin(ctx, c.pool)
	if err != nil {
		return "", err
	}
	defer postgres.End(ctx, tx, &err)
	q := queries.New(tx)
	due, err := ledger.CommissionDue(ctx, q, o.ID)
	if err != nil || !due {
		return effect.NotApplicable, err
	}
	return c.guards.ReleaseCommission(ctx, q, o, messageID)
}
