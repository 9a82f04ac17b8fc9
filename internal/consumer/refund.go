package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/refund"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// HandleOrderRefunded consumes order_refunded, the provider's report that an
// order's money was given back (a refund made in its dashboard, or the
// answer to ours). It applies the refund to the order (applyRefund), once:
// however often the event is delivered, and whether it arrives before or
// after the order's payment.succeeded.
func (c *Consumers) HandleOrderRefunded(msg *message.Message) error {
	ctx, run := msg.Context(), c.newExecution(HandlerOrderRefunded, msg.UUID)
	p, err := messages.DecodeOrderRefunded(msg.Payload)
	if err != nil {
		return c.record(ctx, run, permanent(err))
	}
	ctx = run.ForOrder(ctx, p.OrderID)
	err = c.applyRefund(ctx, run, p.OrderID, msg.UUID)
	if errors.Is(err, order.ErrNotFound) {
		return c.record(ctx, run, permanent(fmt.Errorf("order_refunded for unknown order %s: %w", p.OrderID, err)))
	}
	return c.record(ctx, run, err)
}

// HandleRefundRequested gives an order's money back: it asks the gateway to
// refund the order's charge, then applies the refund to the order. The
// refund at the gateway is irreversible; its guard is the gateway's
// Idempotency-Key, derived from the order (payment.RefundKey), never from
// the delivery. The call comes before its record, so a worker killed
// between them (FaultAfterGatewayRefund) calls again under the same key and
// the gateway answers from its store. A 2xx or a 409 (refunded already,
// under another key) is done; no answer, 408, 425, 429 or a 5xx is retried;
// any other 4xx poisons the message (docs/techniques/compensation.md).
func (c *Consumers) HandleRefundRequested(msg *message.Message) error {
	ctx, run := msg.Context(), c.newExecution(HandlerRefundRequested, msg.UUID)
	p, err := messages.DecodeRefundRequested(msg.Payload)
	if err != nil {
		return c.record(ctx, run, permanent(err))
	}
	ctx = run.ForOrder(ctx, p.OrderID)

	o, err := order.Get(ctx, c.q, p.OrderID)
	if err != nil {
		if errors.Is(err, order.ErrNotFound) {
			err = permanent(fmt.Errorf("refund_requested for unknown order %s: %w", p.OrderID, err))
		}
		return c.record(ctx, run, err)
	}
	if o.Status == order.StatusPending {
		return c.record(ctx, run, permanent(fmt.Errorf("refund_requested for order %s, which is not paid", o.ID)))
	}
	if o.Status != order.StatusRefunded { // refunded: the money is back already, by another path
		if err := c.refundAtGateway(ctx, run, o); err != nil {
			return c.record(ctx, run, err)
		}
	}
	return c.record(ctx, run, c.applyRefund(ctx, run, o.ID, msg.UUID))
}

// refundAtGateway is the guarded step "gateway_refund" of run.
func (c *Consumers) refundAtGateway(ctx context.Context, run *telemetry.Run, o queries.Order) error {
	if c.gateway == nil {
		return errors.New("no payment gateway configured for refunds (FAKES_URL)")
	}
	chargeID, err := c.q.OrderChargeID(ctx, o.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return permanent(fmt.Errorf("no charge of order %s is recorded: refund it in the provider's dashboard", o.ID))
	}
	if err != nil {
		return fmt.Errorf("read the charge of order %s: %w", o.ID, err)
	}
	ctx, refunded := run.Begin(ctx, effect.GatewayRefund, effect.ProviderKey)
	key := payment.RefundKey(o.ID)
	answer, err := c.gateway.Refund(ctx, key, payment.RefundRequest{ChargeID: chargeID, AmountCents: o.AmountCents})
	if err != nil {
		return fmt.Errorf("refund order %s: %w", o.ID, err) // no answer: the same key again later
	}
	if err := c.faults.Hit(FaultAfterGatewayRefund); err != nil {
		return err
	}
	var body struct {
		ID string `json:"id"`
	}
	if answer.Status/100 == 2 {
		_ = json.Unmarshal(answer.Body, &body)
	}
	if err := c.q.GatewayRefundCallInsert(ctx, queries.GatewayRefundCallInsertParams{
		OrderID: o.ID, GatewayKey: key, Status: int32(answer.Status),
		RefundID: pgtype.Text{String: body.ID, Valid: body.ID != ""}, Replayed: answer.Replayed,
	}); err != nil {
		return fmt.Errorf("record the gateway's refund answer for order %s: %w", o.ID, err)
	}
	switch s := answer.Status; {
	case s/100 == 2 && !answer.Replayed:
		refunded.End(effect.Applied)
	case s/100 == 2, s == http.StatusConflict:
		refunded.End(effect.AlreadyApplied)
	case s >= 500, s == http.StatusRequestTimeout, s == http.StatusTooEarly, s == http.StatusTooManyRequests:
		return fmt.Errorf("refund order %s: the gateway answered %d, not now", o.ID, s)
	default:
		return permanent(fmt.Errorf("refund order %s: the gateway refused with %d: %s", o.ID, s, truncate(answer.Body, 200)))
	}
	return nil
}

// applyRefund applies an order's refund, in one transaction, each effect
// under its own guard:
//
//   - the order moves to refunded (the state check of order.MarkRefunded:
//     pending or paid -> refunded, once; refunded is terminal);
//   - its reservation goes back to stock (stock.Release: the reservation
//     rows' released_at, once);
//   - its commission is reversed (ledger.ReverseCommission: a reversal row
//     under its own key, once; never a delete);
//   - when this call moved the order, the customer's notice is written to
//     the outbox (refund_confirmed, one per order).
//
// The three are tried on every delivery: each guard answers for itself.
// The order's row lock, taken by MarkRefunded, serialises this with the
// commission of order_paid (releaseCommissionIfPaid).
func (c *Consumers) applyRefund(ctx context.Context, run *telemetry.Run, orderID uuid.UUID, messageID string) error {
	err := postgres.InTx(ctx, c.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		refunded, err := run.Step(ctx, effect.Refunded, effect.StateCheck, func(ctx context.Context) (effect.Outcome, error) {
			outcome, _, err := c.guards.MarkRefunded(ctx, q, orderID, messageID)
			return outcome, err
		})
		if err != nil {
			return err
		}
		if _, err := run.Step(ctx, effect.StockReleased, effect.Reservation, func(ctx context.Context) (effect.Outcome, error) {
			return c.guards.ReleaseStock(ctx, tx, orderID, messageID)
		}); err != nil {
			return err
		}
		if _, err := run.Step(ctx, effect.CommissionReversed, effect.LedgerKey, func(ctx context.Context) (effect.Outcome, error) {
			return c.guards.ReverseCommission(ctx, q, orderID, messageID)
		}); err != nil {
			return err
		}
		if refunded != effect.Applied {
			return nil
		}
		notice, err := messages.NewRefundConfirmed(orderID)
		if err != nil {
			return err
		}
		return c.guards.Enqueue(ctx, tx, messages.TopicRefundConfirmed, notice)
	})
	if err != nil {
		return fmt.Errorf("apply the refund of order %s: %w", orderID, err)
	}
	return nil
}

// compensate records, in tx, the refund of an order whose items are short
// (short, the error that said so): the guarded step "refund_requested".
func (c *Consumers) compensate(ctx context.Context, run *telemetry.Run, tx pgx.Tx, orderID uuid.UUID, short error) error {
	_, err := run.Step(ctx, effect.RefundRequested, effect.IntentRow, func(ctx context.Context) (effect.Outcome, error) {
		return refund.Compensate(ctx, tx, orderID)
	})
	if err != nil {
		return fmt.Errorf("compensate order %s (%w): %w", orderID, short, err)
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
