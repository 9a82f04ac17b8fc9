package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/notify"
)

// sendClaimed sends the order's e-mail of template at most once, whatever
// the message asking for it, under the e-mail's claim (notify.Claim):
//
//   - sent already: its answer, nothing sent (called false);
//   - an earlier holder's outcome unknown: the provider is asked first
//     (SentFor); what it sent is settled, nothing sent; when it cannot say,
//     nothing is sent and the error is transient (retried later);
//   - otherwise the provider is called under the claim's key and the claim
//     settled, or given back when the call settled nothing.
//
// called reports that the provider answered for this e-mail, a call or a
// look-up: its answer goes to the notification log.
func (c *Consumers) sendClaimed(ctx context.Context, messageID string, orderID uuid.UUID, template string) (sent notify.Sent, called bool, err error) {
	cl, err := c.guards.ClaimNotice(ctx, c.q, orderID, template, notify.MessageKey(messageID))
	if err != nil {
		return notify.Sent{}, false, err
	}
	if cl.Sent {
		return notify.Sent{ID: cl.NotificationID, Replayed: true, Key: cl.Key}, false, nil
	}
	held := context.WithoutCancel(ctx) // once the claim is held, its settle or release must happen
	if cl.Unknown {
		found, ok, err := c.notifier.SentFor(ctx, orderID, template)
		switch {
		case err != nil:
			err = fmt.Errorf("the outcome of an earlier %s e-mail of order %s is unknown and the provider cannot say, so nothing is sent: %w", template, orderID, err)
			return notify.Sent{}, false, errors.Join(err, cl.Release(held, c.q))
		case ok:
			return found, true, cl.Settle(held, c.q, found.ID)
		}
	}
	sent, err = c.notifier.Send(ctx, c.guards.ProviderKey(cl.Key), orderID, template)
	if err != nil {
		return notify.Sent{}, false, errors.Join(err, cl.Release(held, c.q))
	}
	return sent, true, cl.Settle(held, c.q, sent.ID)
}
