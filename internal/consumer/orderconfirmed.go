package consumer

import (
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
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
//     is acknowledged without calling the provider (c.inboxSeen, levers.go);
//   - the provider's Idempotency-Key, set to the message id (notify.Client
//     sends a fresh key per call instead with levers.ProviderKey off).
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

// deliverNotice is the body of HandleOrderConfirmed, for any notice n.
func (c *Consumers) deliverNotice(msg *message.Message, n notice) error {
	ctx := msg.Context()
	run := c.newExecution(n.handler, msg.UUID)
	orderID, err := n.orderID(msg.Payload)
	if err != nil {
		return c.record(ctx, run, permanent(err))
	}
	run.orderID = uuid.NullUUID{UUID: orderID, Valid: true}
	ctx = telemetry.WithOrderID(ctx, orderID.String())
	inboxKey := queries.ConsumerInboxExistsParams{Consumer: n.handler, MessageID: msg.UUID}

	inboxCtx, delivered := run.begin(ctx, n.delivered, effect.Inbox)
	seen, err := c.inboxSeen(inboxCtx, inboxKey)
	if err != nil {
		return c.record(ctx, run, err)
	}
	if seen {
		delivered.end(effect.AlreadyApplied)
		return c.record(ctx, run, nil)
	}

	sendCtx, notification := run.begin(inboxCtx, n.sent, effect.ProviderKey)
	sent, err := c.notifier.Send(sendCtx, msg.UUID, orderID, n.template)
	if errors.Is(err, notify.ErrRejected) {
		return c.record(ctx, run, permanent(err))
	}
	if err != nil {
		err = c.record(ctx, run, err)
		notify.WaitRetryAfter(ctx, err) // "not now": wait as asked, then the router retries
		return err
	}
	if err := c.q.NotificationLogInsert(sendCtx, queries.NotificationLogInsertParams{
		OrderID: orderID, MessageID: msg.UUID, IdempotencyKey: sent.Key,
		ProviderNotificationID: sent.ID, Replayed: sent.Replayed, Template: n.template,
	}); err != nil {
		return c.record(ctx, run, fmt.Errorf("log provider answer: %w", err))
	}
	outcome := effect.Applied
	if sent.Replayed {
		outcome = effect.AlreadyApplied
	}
	notification.end(outcome)

	if err := c.levers.Hit(FaultAfterProviderCall); err != nil {
		return c.record(ctx, run, err)
	}

	inserted, err := c.q.ConsumerInboxInsert(inboxCtx, queries.ConsumerInboxInsertParams{
		Consumer: n.handler, MessageID: msg.UUID,
		OrderID: uuid.NullUUID{UUID: orderID, Valid: true},
	})
	if err != nil {
		return c.record(ctx, run, fmt.Errorf("write inbox: %w", err))
	}
	outcome = effect.Applied
	if inserted == 0 {
		outcome = effect.AlreadyApplied
	}
	delivered.end(outcome)
	return c.record(ctx, run, nil)
}
