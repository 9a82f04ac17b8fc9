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

// HandleOrderConfirmed sends the customer's confirmation through the external
// notification provider, an effect that cannot be undone.
//
// Two guards protect it:
//   - the inbox, keyed by (consumer, message id): a message already handled
//     is acknowledged without calling the provider (inbox.Seen);
//   - the provider's Idempotency-Key, set to the message id
//     (notify.MessageKey).
//
// The provider is called BEFORE the inbox row is written. A crash between the
// two leaves no inbox row, so the redelivery calls the provider again, with
// the same key, and the provider answers from its store without sending.
// The opposite order (inbox first, then call) would turn that crash into a
// lost notification: the inbox would say "done" for an e-mail never sent.
// For an irreversible external effect, "maybe twice, deduplicated by the
// provider" beats "maybe never".
//
// What the provider answers decides what happens to the message. A refusal
// (notify.ErrRejected, a 4xx such as 400 or 422) can never succeed: the
// message goes to the poison queue at once. "Not now" (429, 408, 409, 425, a
// 5xx: notify.NotNowError) or no answer at all is transient: the handler
// waits the provider's Retry-After (capped at notify.MaxRetryAfter, and by
// the delivery's context) and fails; the router retries with backoff, then
// nacks, and the broker redelivers. Poisoning a "not now" would lose the
// e-mail until an operator replays it. Every retry sends the same key, so
// the provider never sends twice.
//
// In the trace, the inbox's span "effect confirmation_delivered" encloses the
// provider's "effect notification_sent", which encloses the HTTP call: the
// inbox guards the whole delivery.
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

	_, err = run.Step(ctx, n.delivered, effect.Inbox, func(ctx context.Context) (effect.Outcome, error) {
		seen, err := c.guards.InboxSeen(ctx, c.q, n.handler, msg.UUID)
		if err != nil || seen {
			return effect.AlreadyApplied, err
		}
		if err := c.sendNotice(ctx, run, msg.UUID, orderID, n); err != nil {
			return "", err
		}
		if err := c.faults.Hit(FaultAfterProviderCall); err != nil {
			return "", err
		}
		return inbox.Record(ctx, c.q, n.handler, msg.UUID, orderID)
	})
	if errors.Is(err, notify.ErrRejected) {
		return c.record(ctx, run, permanent(err))
	}
	err = c.record(ctx, run, err)
	notify.WaitRetryAfter(ctx, err) // "not now": wait as asked, then the router retries
	return err
}

// sendNotice asks the provider for notice n about the order, under the message's
// provider key, and logs its answer: the guarded step n.sent.
func (c *Consumers) sendNotice(ctx context.Context, run *telemetry.Run, messageID string, orderID uuid.UUID, n notice) error {
	_, err := run.Step(ctx, n.sent, effect.ProviderKey, func(ctx context.Context) (effect.Outcome, error) {
		sent, err := c.notifier.Send(ctx, c.guards.ProviderKey(messageID), orderID, n.template)
		if err != nil {
			return "", err
		}
		if err := c.q.NotificationLogInsert(ctx, queries.NotificationLogInsertParams{
			OrderID: orderID, MessageID: messageID, IdempotencyKey: sent.Key,
			ProviderNotificationID: sent.ID, Replayed: sent.Replayed, Template: n.template,
		}); err != nil {
			return "", fmt.Errorf("log provider answer: %w", err)
		}
		if sent.Replayed {
			return effect.AlreadyApplied, nil
		}
		return effect.Applied, nil
	})
	return err
}
