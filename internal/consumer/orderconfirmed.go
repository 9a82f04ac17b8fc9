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

// HandleOrderConfirmed sends the customer's confirmation, an effect that
// cannot be undone, under the inbox, keyed by (consumer, message id), and the
// provider's Idempotency-Key. The provider is called before the inbox row is
// written: a crash between them repeats the call under the same key, answered
// from the provider's store (the opposite order would lose the e-mail). A
// refusal goes to the poison queue; a "not now" is retried, after its
// Retry-After, with the same key (docs/techniques/inbox.md, provider-key.md).
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

// HandleRefundConfirmed tells the customer their order was refunded, under
// HandleOrderConfirmed's guards.
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

// notice is one kind of message to the customer: handler, template, steps.
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

// deliverOnce is deliverNotice's inbox step: a message seen is already
// applied; otherwise sendNotice, then the inbox's record.
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

// sendNotice, the step n.sent, sends n once per order (sendClaimed) and logs
// the provider's answer before the claim is settled: after a crash between
// them the provider is asked again, so the log misses no e-mail sent.
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

// logAnswer writes the provider's answer to the notification log.
func (c *Consumers) logAnswer(ctx context.Context, messageID string, orderID uuid.UUID, template string, sent notify.Sent) error {
	if err := c.q.NotificationLogInsert(ctx, queries.NotificationLogInsertParams{
		OrderID: orderID, MessageID: messageID, IdempotencyKey: sent.Key,
		ProviderNotificationID: sent.ID, Replayed: sent.Replayed, Template: template,
	}); err != nil {
		return fmt.Errorf("log provider answer: %w", err)
	}
	return nil
}
