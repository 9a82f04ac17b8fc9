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
// called reports that the provider answered (a call or a look-up), which log
// writes to the notification log before the claim is settled. The batch
// handler runs the claims and settling in one goroutine, the calls side by side.
func (c *Consumers) sendClaimed(ctx context.Context, messageID string, orderID uuid.UUID, template string, log func(notify.Sent) error) (notify.Sent, bool, error) {
	cl, err := c.guards.ClaimNotice(ctx, c.q, orderID, template, notify.MessageKey(messageID))
	if err != nil {
		return notify.Sent{}, false, err
	}
	if cl.Sent {
		return alreadySent(cl), false, nil
	}
	sent, err := c.callClaimed(ctx, cl, orderID, template)
	if err == nil {
		err = log(sent)
	}
	return sent, err == nil, c.closeClaim(ctx, cl, sent, err)
}

// alreadySent is the answer of a claim found sent: no call.
func alreadySent(cl notify.Claimed) notify.Sent {
	return notify.Sent{ID: cl.NotificationID, Replayed: true, Key: cl.Key}
}

// callClaimed is sendClaimed's provider part, using no database: the look-up
// first when the claim's outcome is unknown, then the call under its key.
func (c *Consumers) callClaimed(ctx context.Context, cl notify.Claimed, orderID uuid.UUID, template string) (notify.Sent, error) {
	if cl.Unknown {
		found, ok, err := c.notifier.SentFor(ctx, orderID, template)
		switch {
		case err != nil:
			return notify.Sent{}, fmt.Errorf("the outcome of an earlier %s e-mail of order %s is unknown and the provider cannot say, so nothing is sent: %w", template, orderID, err)
		case ok:
			return found, nil
		}
	}
	return c.notifier.Send(ctx, c.guards.ProviderKey(cl.Key), orderID, template)
}

// closeClaim settles the claim, or gives it back after callErr, even when
// the delivery's context is done, and returns callErr with what it met.
func (c *Consumers) closeClaim(ctx context.Context, cl notify.Claimed, sent notify.Sent, callErr error) error {
	ctx = context.WithoutCancel(ctx)
	if callErr != nil {
		return errors.Join(callErr, cl.Release(ctx, c.q))
	}
	return cl.Settle(ctx, c.q, sent.ID)
}
