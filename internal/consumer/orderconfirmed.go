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
	ctx := msg.Context()
	run := c.newExecution(HandlerOrderConfirmed, msg.UUID)
	p, err := messages.DecodeOrderConfirmed(msg.Payload)
	if err != nil {
		return c.record(ctx, run, permanent(err))
	}
	run.orderID = uuid.NullUUID{UUID: p.OrderID, Valid: true}
	ctx = telemetry.WithOrderID(ctx, p.OrderID.String())
	inboxKey := queries.ConsumerInboxExistsParams{Consumer: HandlerOrderConfirmed, MessageID: msg.UUID}

	inboxCtx, delivered := run.begin(ctx, effect.ConfirmationDelivered, effect.Inbox)
	seen, err := c.inboxSeen(inboxCtx, inboxKey)
	if err != nil {
		return c.record(ctx, run, err)
	}
	if seen {
		delivered.end(effect.AlreadyApplied)
		return c.record(ctx, run, nil)
	}

	sendCtx, notification := run.begin(inboxCtx, effect.NotificationSent, effect.ProviderKey)
	sent, err := c.notifier.SendOrderConfirmed(sendCtx, msg.UUID, p.OrderID)
	if errors.Is(err, notify.ErrRejected) {
		return c.record(ctx, run, permanent(err))
	}
	if err != nil {
		err = c.record(ctx, run, err)
		notify.WaitRetryAfter(ctx, err) // "not now": wait as asked, then the router retries
		return err
	}
	if err := c.q.NotificationLogInsert(sendCtx, queries.NotificationLogInsertParams{
		OrderID: p.OrderID, MessageID: msg.UUID, IdempotencyKey: sent.Key,
		ProviderNotificationID: sent.ID, Replayed: sent.Replayed,
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

	n, err := c.q.ConsumerInboxInsert(inboxCtx, queries.ConsumerInboxInsertParams{
		Consumer: HandlerOrderConfirmed, MessageID: msg.UUID,
		OrderID: uuid.NullUUID{UUID: p.OrderID, Valid: true},
	})
	if err != nil {
		return c.record(ctx, run, fmt.Errorf("write inbox: %w", err))
	}
	outcome = effect.Applied
	if n == 0 {
		outcome = effect.AlreadyApplied
	}
	delivered.end(outcome)
	return c.record(ctx, run, nil)
}
