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
	if err := outbox.Publish(ctx, tx, messages.TopicOrderConfirmed, confirmation); err != nil {
		return err
	}
	enqueued.end(effect.Applied)
	return nil
}

// publishIfOutboxOff does nothing unless levers.Outbox is off. Then it is
// the mistake the outbox prevents: it publishes the confirmation (nil: none,
// the order was already paid) straight to the broker, after the
// transition's commit. A crash before it loses the confirmation for good;
// nothing will ever send it again.
func (c *Consumers) publishIfOutboxOff(ctx context.Context, confirmation *message.Message) error {
	if !c.levers.Off(levers.Outbox) || confirmation == nil {
		return nil
	}
	telemetry.InjectMessage(ctx, confirmation)
	if err := c.direct.Publish(messages.TopicOrderConfirmed, confirmation); err != nil {
		return fmt.Errorf("publish confirmation: %w", err)
	}
	return nil
}

// releaseCommission is ledger.ReleaseCommission, keyed by the business
// intent; with levers.LedgerKey off, ledger.ReleaseCommissionUnguarded,
// keyed by the delivery.
func (c *Consumers) releaseCommission(ctx context.Context, o queries.Order, messageID string) (effect.Outcome, error) {
	if c.levers.Off(levers.LedgerKey) {
		return ledger.ReleaseCommissionUnguarded(ctx, c.q, o, messageID)
	}
	return ledger.ReleaseCommission(ctx, c.q, o, messageID)
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
