package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/inbox"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// HandleOrderConfirmed sends the customer's confirmation through the
// external notification provider, an effect that cannot be undone, under
// two guards: the inbox, keyed by (consumer, message id), and the provider's
// Idempotency-Key, the message id. The provider is called before the inbox
// row is written: a crash between them repeats the call under the same key,
// which the provider answers from its store; the opposite order would turn
// that crash into an e-mail never sent. A refusal (notify.ErrRejected) goes
// to the poison queue; a "not now" or no answer is retried, after the
// provider's Retry-After, with the same key (docs/techniques/inbox.md,
// docs/techniques/provider-key.md).
func (c *Consumers) HandleOrderConfirmed(msg *message.Message) error {
	return c.deliverNotice(msg, notice{
		handler:   HandlerOrderConfirmed,
		template:  notify.TemplateOrderConfirmed,
		delivered: effect.ConfirmationDelivered,
		sent:      effect.NotificationSent,
		orderID: func(payload []byte) (uuid.UUID, error) {
			p, err := messages.DecodeOrderConfirmed(payload)
			return p.OrderID, err
		},
	})
}

// HandleRefundConfirmed tells the customer their order was refunded, with
// the guards of HandleOrderConfirmed: the inbox, then the provider's
// Idempotency-Key (the message id, one per order). Its steps are
// "refund_confirmation_delivered" (inbox) and "refund_notified" (provider).
func (c *Consumers) HandleRefundConfirmed(msg *message.Message) error {
	return c.deliverNotice(msg, notice{
		handler:   HandlerRefundConfirmed,
		template:  notify.TemplateOrderRefunded,
		delivered: effect.RefundConfirmationDelivered,
		sent:      effect.RefundNotified,
		orderID: func(payload []byte) (uuid.UUID, error) {
			p, err := messages.DecodeRefundConfirmed(payload)
			return p.OrderID, err
		},
	})
}

// notice is one kind of message to the customer: which handler delivers it,
// with which template, under which effect names.
type notice struct {
	handler   string
	template  string
	delivered string // the inbox's step
	sent      string // the provider's step
	orderID   func(payload []byte) (uuid.UUID, error)
}

// deliverNotice is the body of HandleOrderConfirmed, for any notice n: the
// inbox's step encloses the provider's.
func (c *Consumers) deliverNotice(msg *message.Message, n notice) error {
	ctx, run := msg.Context(), c.newExecution(n.handler, msg.UUID)
	orderID, err := n.orderID(msg.Payload)
	if err != nil {
		return c.record(ctx, run, permanent(err))
	}
	ctx = run.ForOrder(ctx, orderID)

	ictx, step := run.Begin(ctx, n.delivered, effect.Inbox)
	delivered, err := c.deliverOnce(ictx, run, msg.UUID, orderID, n)
	err = step.Answer(delivered, err)
	if errors.Is(err, notify.ErrRejected) {
		return c.record(ctx, run, permanent(err))
	}
	err = c.record(ctx, run, err)
	notify.WaitRetryAfter(ctx, err) // "not now": wait as asked, then the router retries
	return err
}

// deliverOnce is the inbox's step of deliverNotice: a message the inbox has
// seen is already applied; otherwise the notice is sent (sendNotice) and the
// message recorded in the inbox after the provider's call.
func (c *Consumers) deliverOnce(ctx context.Context, run *telemetry.Run, messageID string, orderID uuid.UUID, n notice) (effect.Outcome, error) {
	seen, err := c.guards.InboxSeen(ctx, c.q, n.handler, messageID)
	if err != nil || seen {
		return effect.AlreadyApplied, err
	}
	if err := c.sendNotice(ctx, run, messageID, orderID, n); err != nil {
		return "", err
	}
	if err := c.faults.Hit(FaultAfterProviderCall); err != nil {
		return "", err
	}
	return inbox.Record(ctx, c.q, n.handler, messageID, orderID)
}

// sendNotice sends notice n about the order once per order (sendClaimed,
// under the e-mail's claim and the provider's key) and logs the provider's
// answer before the claim is settled: a crash between the two leaves the
// claim to be taken over, and the provider is asked again, so the log never
// misses an e-mail the claim says was sent. The guarded step n.sent.
func (c *Consumers) sendNotice(ctx context.Context, run *telemetry.Run, messageID string, orderID uuid.UUID, n notice) error {
	ctx, step := run.Begin(ctx, n.sent, effect.NotificationClaim)
	sent, called, err := c.sendClaimed(ctx, messageID, orderID, n.template, func(sent notify.Sent) error {
		return c.logAnswer(ctx, messageID, orderID, n.template, sent)
	})
	if err != nil || !called || sent.Replayed {
		return step.Answer(effect.AlreadyApplied, err)
	}
	return step.Answer(effect.Applied, nil)
}

// logAnswer writes the provider's answer about the order's e-mail of
// template to the notification log.
func (c *Consumers) logAnswer(ctx context.Context, messageID string, orderID uuid.UUID, template string, sent notify.Sent) error {
	if err := c.q.NotificationLogInsert(ctx, queries.NotificationLogInsertParams{
		OrderID: orderID, MessageID: messageID, IdempotencyKey: sent.Key,
		ProviderNotificationID: sent.ID, Replayed: sent.Replayed, Template: template,
	}); err != nil {
		return fmt.Errorf("log provider answer: %w", err)
	}
	return nil
}
