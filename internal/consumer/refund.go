package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

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
// any other answer is a refusal for good: the order moves to refund_failed
// and the message goes to the poison queue with the gateway's words
// (refundRefused). A redelivery for a refund_failed order does not ask the
// gateway again (refusedBefore). docs/techniques/compensation.md.
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
	switch o.Status {
	case order.StatusPending:
		return c.record(ctx, run, permanent(fmt.Errorf("refund_requested for order %s, which is not paid", o.ID)))
	case order.StatusRefundFailed:
		return c.record(ctx, run, c.refusedBefore(ctx, run, o.ID, msg.UUID))
	case order.StatusPaid:
		if err := c.refundAtGateway(ctx, run, o, msg.UUID); err != nil {
			return c.record(ctx, run, err)
		}
	} // refunded: the money is back already, by another path
	return c.record(ctx, run, c.applyRefund(ctx, run, o.ID, msg.UUID))
}

// refundAtGateway is the guarded step "gateway_refund" of run.
func (c *Consumers) refundAtGateway(ctx context.Context, run *telemetry.Run, o queries.Order, messageID string) error {
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
	answer, err := c.askThenRefund(ctx, key, o, chargeID)
	if err != nil {
		return fmt.Errorf("refund order %s: %w", o.ID, err) // no answer: ask again later
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
	call := queries.GatewayRefundCallInsertParams{
		OrderID: o.ID, GatewayKey: key, Status: int32(answer.Status),
		RefundID: pgtype.Text{String: body.ID, Valid: body.ID != ""}, Replayed: answer.Replayed,
	}
	done := answer.Status/100 == 2 || answer.Status == http.StatusConflict
	if !done && !notNow(answer.Status) {
		call.Detail = pgtype.Text{String: refusalDetail(answer.Body), Valid: true}
		return c.refundRefused(ctx, run, refunded, call, messageID)
	}
	if err := c.q.GatewayRefundCallInsert(ctx, call); err != nil {
		return fmt.Errorf("record the gateway's refund answer for order %s: %w", o.ID, err)
	}
	switch {
	case !done:
		return fmt.Errorf("refund order %s: the gateway answered %d, not now", o.ID, answer.Status)
	case answer.Status/100 == 2 && !answer.Replayed:
		refunded.End(effect.Applied)
	default:
		refunded.End(effect.AlreadyApplied)
	}
	return nil
}

// askThenRefund asks the gateway for the refunds of the order before asking
// for one: a refund whose answer was lost, by a worker killed after the call
// or a timeout, is found there and answered as a replay, never sent again
// blind to a gateway that may have forgotten its key
// (docs/techniques/ask-first.md). The service keeps no row that says a
// refund call was sent, so it always asks; an error means the gateway could
// not say, and nothing was sent.
func (c *Consumers) askThenRefund(ctx context.Context, key string, o queries.Order, chargeID string) (payment.GatewayAnswer, error) {
	found, err := c.gateway.RefundsOf(ctx, o.ID)
	if err != nil {
		return payment.GatewayAnswer{}, err
	}
	if len(found) > 0 {
		return payment.GatewayAnswer{Status: http.StatusOK, Body: found[0], Replayed: true}, nil
	}
	return c.gateway.Refund(ctx, key, payment.RefundRequest{ChargeID: chargeID, AmountCents: o.AmountCents})
}

// notNow reports whether a gateway's answer says "not now" rather than
// "no": a 5xx, 408, 425 or 429 is retried under the same key.
func notNow(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooEarly || status == http.StatusTooManyRequests
}

// refundRefused handles a refund the gateway refused for good (step, the
// gateway_refund step, fails with the refusal): in one transaction it
// records the gateway's answer (call, with its body) and moves the order
// paid -> refund_failed (order.MarkRefundFailed, a state check: once), then
// returns the refusal as a permanent error, so the router parks the message
// in the poison queue with the gateway's status and body as its reason. An
// order refunded meanwhile by another path (the provider's payment.refunded)
// has its money back: the refusal no longer matters, and nil lets the
// handler apply the refund as done. A failed transaction is retried: the
// gateway is asked again under the same key, and refuses again.
func (c *Consumers) refundRefused(ctx context.Context, run *telemetry.Run, step *telemetry.Step, call queries.GatewayRefundCallInsertParams, messageID string) error {
	refusal := fmt.Errorf("refund order %s: the gateway refused it for good with %d: %s; "+
		"refund it in the provider's dashboard, then run orderpaid reconcile", call.OrderID, call.Status, call.Detail.String)
	step.Fail(refusal)
	var outcome effect.Outcome
	err := postgres.InTx(ctx, c.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := q.GatewayRefundCallInsert(ctx, call); err != nil {
			return fmt.Errorf("record the gateway's refund answer: %w", err)
		}
		ctx, step := run.Begin(ctx, effect.RefundFailed, effect.StateCheck)
		var err error
		outcome, err = order.MarkRefundFailed(ctx, q, call.OrderID, messageID)
		return step.Answer(outcome, err)
	})
	switch {
	case err != nil:
		return fmt.Errorf("record the refused refund of order %s: %w", call.OrderID, err)
	case outcome == effect.NotApplicable:
		return nil // refunded meanwhile: applyRefund answers already_applied
	}
	return permanent(refusal)
}

// refusedBefore answers a refund_requested for an order whose refund the
// gateway refused for good before (a broker's redelivery, an operator's
// replay of the poison queue): the gateway is not asked again, since its
// answer would not change. The state check of MarkRefundFailed answers
// already_applied; the message goes back to the poison queue, named with
// the refusal the service recorded, for a person to act on.
func (c *Consumers) refusedBefore(ctx context.Context, run *telemetry.Run, orderID uuid.UUID, messageID string) error {
	stepCtx, step := run.Begin(ctx, effect.RefundFailed, effect.StateCheck)
	if err := step.Answer(order.MarkRefundFailed(stepCtx, c.q, orderID, messageID)); err != nil {
		return err
	}
	last, err := c.q.GatewayRefundCallLast(ctx, orderID)
	if err != nil {
		return fmt.Errorf("read the refused refund of order %s: %w", orderID, err)
	}
	return permanent(fmt.Errorf("refund_requested for order %s, whose refund the gateway refused for good with %d: %s; "+
		"not asked again: refund it in the provider's dashboard, then run orderpaid reconcile", orderID, last.Status, last.Detail.String))
}

// applyRefund applies an order's refund, in one transaction, each effect
// under its own guard:
//
//   - the order moves to refunded (the state check of order.MarkRefunded:
//     pending, paid or refund_failed -> refunded, once; refunded is
//     terminal);
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
		stepCtx, step := run.Begin(ctx, effect.Refunded, effect.StateCheck)
		refunded, _, err := c.guards.MarkRefunded(stepCtx, q, orderID, messageID)
		if err := step.Answer(refunded, err); err != nil {
			return err
		}
		stepCtx, step = run.Begin(ctx, effect.StockReleased, effect.Reservation)
		if err := step.Answer(c.guards.ReleaseStock(stepCtx, tx, orderID, messageID)); err != nil {
			return err
		}
		stepCtx, step = run.Begin(ctx, effect.CommissionReversed, effect.LedgerKey)
		if err := step.Answer(c.guards.ReverseCommission(stepCtx, q, orderID, messageID)); err != nil {
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
	ctx, step := run.Begin(ctx, effect.RefundRequested, effect.IntentRow)
	if err := step.Answer(refund.Compensate(ctx, tx, orderID)); err != nil {
		return fmt.Errorf("compensate order %s (%w): %w", orderID, short, err)
	}
	return nil
}

// refusalDetail is what the service keeps of a refusal's body: its first
// 200 bytes, as valid text (a body cut in the middle of a character, or
// with NUL bytes, is still stored).
func refusalDetail(body []byte) string {
	return strings.ReplaceAll(strings.ToValidUTF8(truncate(body, 200), ""), "\x00", "")
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
