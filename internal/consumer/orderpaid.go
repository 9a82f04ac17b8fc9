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
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/faultpoint"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// HandleOrderPaid consumes order_paid in two steps, each in its own
// transaction, each protected by its own guard:
//
//  1. mark the order paid (state check) and, in the same transaction, write
//     order_confirmed to the outbox: the confirmation exists exactly when the
//     transition happened;
//  2. release the affiliate commission (unique ledger key).
//
// A failure between the steps is a real partial failure: the message is
// redelivered, step 1 answers AlreadyApplied and step 2 completes the work.
//
// Each guarded step is a span "effect <name>" (run.begin ... end) carrying
// the guard's answer, under the delivery's consumer span.
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
		q := queries.New(tx)
		markPaid := order.MarkPaid
		if !c.guards.StateCheck {
			markPaid = order.MarkPaidUnguarded
		}
		paidCtx, paid := run.begin(ctx, "paid", effect.StateCheck)
		outcome, ord, err := markPaid(paidCtx, q, p.OrderID, msg.UUID)
		if err != nil {
			return err
		}
		o = ord
		paid.end(outcome)
		if outcome != effect.Applied {
			return nil
		}
		confirmation, err = messages.NewOrderConfirmed(o.ID)
		if err != nil {
			return err
		}
		if !c.guards.Outbox {
			return nil // published after commit below: the mistake
		}
		enqueueCtx, enqueued := run.begin(ctx, "confirmation_enqueued", effect.Outbox)
		if err := outbox.Publish(enqueueCtx, tx, messages.TopicOrderConfirmed, confirmation); err != nil {
			return err
		}
		enqueued.end(effect.Applied)
		return nil
	})
	if errors.Is(err, order.ErrNotFound) {
		return c.record(ctx, run, permanent(fmt.Errorf("order_paid for unknown order %s: %w", p.OrderID, err)))
	}
	if err != nil {
		return c.record(ctx, run, fmt.Errorf("step 1, mark paid: %w", err))
	}
	if !c.guards.Outbox && confirmation != nil {
		// Without the outbox: publish after commit. A crash right here loses
		// the confirmation for good; nothing will ever send it again.
		if err := c.faults.Hit(faultpoint.AfterMarkPaid); err != nil {
			return c.record(ctx, run, err)
		}
		telemetry.InjectMessage(ctx, confirmation)
		if err := c.direct.Publish(messages.TopicOrderConfirmed, confirmation); err != nil {
			return c.record(ctx, run, fmt.Errorf("publish confirmation: %w", err))
		}
	} else if err := c.faults.Hit(faultpoint.AfterMarkPaid); err != nil {
		return c.record(ctx, run, err)
	}

	release := ledger.ReleaseCommission
	if !c.guards.LedgerKey {
		release = func(ctx context.Context, q *queries.Queries, o queries.Order, messageID string) (effect.Outcome, error) {
			return ledger.ReleaseCommissionKeyedBy(ctx, q, o, messageID, "delivery:"+messageID)
		}
	}
	releaseCtx, commission := run.begin(ctx, "commission", effect.LedgerKey)
	outcome, err := release(releaseCtx, c.q, o, msg.UUID)
	if err != nil {
		return c.record(ctx, run, fmt.Errorf("step 2, release commission: %w", err))
	}
	commission.end(outcome)

	return c.record(ctx, run, c.faults.Hit(faultpoint.BeforeAck))
}
