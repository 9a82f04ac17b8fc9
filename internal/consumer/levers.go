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
	"github.com/orderpaid/orderpaid/internal/stock"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// This file is where the lab's levers reach the handlers. Each guarded step
// of a handler is one call to a method below; the method calls the guard
// or, with that guard switched off (--without NAME), the realistic mistake
// the guard prevents, kept beside the guard in its own package. In
// production (levers.None()) every method is its guard.

// Fault points of the consumers, armed with --faults.
const (
	// FaultAfterMarkPaid fires in HandleOrderPaid between step 1 (order
	// marked paid, confirmation in the outbox) and step 2 (commission).
	FaultAfterMarkPaid = "order_paid.after_mark_paid"
	// FaultBeforeAck fires after every effect of order_paid committed,
	// before the message is acknowledged: a timeout that left the work done.
	FaultBeforeAck = "order_paid.before_ack"
	// FaultAfterProviderCall fires in HandleOrderConfirmed after the
	// notification provider answered, before the inbox row is written.
	FaultAfterProviderCall = "order_confirmed.after_provider_call"
)

// markPaid is order.MarkPaid, the state check; with levers.StateCheck off,
// order.MarkPaidUnguarded, an unconditional UPDATE.
func (c *Consumers) markPaid(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, queries.Order, error) {
	if c.levers.Off(levers.StateCheck) {
		return order.MarkPaidUnguarded(ctx, q, orderID, messageID)
	}
	return order.MarkPaid(ctx, q, orderID, messageID)
}

// enqueueConfirmation writes the confirmation to the outbox in tx, the
// transition's transaction, as the guarded step "confirmation_enqueued" of
// run. With levers.Outbox off it writes nothing, and publishIfOutboxOff
// sends the confirmation once tx has committed: the mistake.
func (c *Consumers) enqueueConfirmation(ctx context.Context, run *execution, tx pgx.Tx, confirmation *message.Message) error {
	if c.levers.Off(levers.Outbox) {
		return nil
	}
	ctx, enqueued := run.begin(ctx, effect.ConfirmationEnqueued, effect.Outbox)
	if err := c.enqueue(ctx, tx, messages.TopicOrderConfirmed, confirmation); err != nil {
		return err
	}
	enqueued.end(effect.Applied)
	return nil
}

// enqueue writes msg to topic through the outbox, in tx. With levers.Outbox
// off it writes nothing, and publishIfOutboxOff sends msg once tx has
// committed: the mistake.
func (c *Consumers) enqueue(ctx context.Context, tx pgx.Tx, topic string, msg *message.Message) error {
	if c.levers.Off(levers.Outbox) {
		return nil
	}
	return outbox.Publish(ctx, tx, topic, msg)
}

// publishIfOutboxOff does nothing unless levers.Outbox is off. Then it is
// the mistake the outbox prevents: it publishes msg (nil: none, the
// transition had happened before) straight to the broker, after the
// transition's commit. A crash before it loses the message for good;
// nothing will ever send it again.
func (c *Consumers) publishIfOutboxOff(ctx context.Context, topic string, msg *message.Message) error {
	if !c.levers.Off(levers.Outbox) || msg == nil {
		return nil
	}
	telemetry.InjectMessage(ctx, msg)
	if err := c.direct.Publish(topic, msg); err != nil {
		return fmt.Errorf("publish %s: %w", topic, err)
	}
	return nil
}

// releaseCommission is ledger.ReleaseCommission, keyed by the business
// intent; with levers.LedgerKey off, ledger.ReleaseCommissionUnguarded,
// keyed by the delivery.
func (c *Consumers) releaseCommission(ctx context.Context, q *queries.Queries, o queries.Order, messageID string) (effect.Outcome, error) {
	if c.levers.Off(levers.LedgerKey) {
		return ledger.ReleaseCommissionUnguarded(ctx, q, o, messageID)
	}
	return ledger.ReleaseCommission(ctx, q, o, messageID)
}

// reverseCommission is ledger.ReverseCommission, under the reversal's own
// business key; with levers.LedgerKey off, ledger.ReverseCommissionUnguarded,
// keyed by the delivery.
func (c *Consumers) reverseCommission(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, error) {
	if c.levers.Off(levers.LedgerKey) {
		return ledger.ReverseCommissionUnguarded(ctx, q, orderID, messageID)
	}
	return ledger.ReverseCommission(ctx, q, orderID, messageID)
}

// markRefunded is order.MarkRefunded, the state check of the refund; with
// levers.StateCheck off, order.MarkRefundedUnguarded, an unconditional
// UPDATE.
func (c *Consumers) markRefunded(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, error) {
	if c.levers.Off(levers.StateCheck) {
		return order.MarkRefundedUnguarded(ctx, q, orderID, messageID)
	}
	outcome, _, err := order.MarkRefunded(ctx, q, orderID, messageID)
	return outcome, err
}

// releaseStock is stock.Release, in tx, as the guarded step
// "stock_released" of run; with levers.StockReservation off,
// stock.ReleaseUnguarded, the naive counter that gives the items back once
// per delivery.
func (c *Consumers) releaseStock(ctx context.Context, run *execution, tx pgx.Tx, orderID uuid.UUID, messageID string) error {
	ctx, released := run.begin(ctx, effect.StockReleased, effect.Reservation)
	release := stock.Release
	if c.levers.Off(levers.StockReservation) {
		release = stock.ReleaseUnguarded
	}
	outcome, err := release(ctx, tx, orderID, messageID)
	if err != nil {
		return err
	}
	released.end(outcome)
	return nil
}

// inboxSeen looks key up in the consumer inbox: true when the message was
// already handled. With levers.Inbox off it answers false without looking,
// the mistake: every delivery calls the provider.
func (c *Consumers) inboxSeen(ctx context.Context, key queries.ConsumerInboxExistsParams) (bool, error) {
	if c.levers.Off(levers.Inbox) {
		return false, nil
	}
	seen, err := c.q.ConsumerInboxExists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("check inbox: %w", err)
	}
	return seen, nil
}

// reserveStock is stock.Reserve, the reservation row and the guarded
// decrement, in tx (the transition's transaction), as the guarded step
// "stock_reserved" of run; with levers.StockReservation off,
// stock.ReserveUnguarded, the naive counter that takes the items once per
// delivery.
func (c *Consumers) reserveStock(ctx context.Context, run *execution, tx pgx.Tx, orderID uuid.UUID, messageID string) error {
	ctx, reserved := run.begin(ctx, effect.StockReserved, effect.Reservation)
	reserve := stock.Reserve
	if c.levers.Off(levers.StockReservation) {
		reserve = stock.ReserveUnguarded
	}
	outcome, err := reserve(ctx, tx, orderID, messageID)
	if err != nil {
		return err
	}
	reserved.end(outcome)
	return nil
}
