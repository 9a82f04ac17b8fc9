package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/inbox"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// maxProviderCalls bounds the provider calls one batch has in flight.
const maxProviderCalls = 8

// HandleOrderConfirmedBatch sends the confirmations of a batch with the
// set forms of HandleOrderConfirmed's guards, one error per message in
// msgs' order: one inbox look-up for the batch (inbox.SeenBatch), the
// provider called for the others side by side (at most maxProviderCalls at
// once, each under its message id as the key, each failure its message's
// own), the answers logged in one statement, then the inbox rows in one
// INSERT ... ON CONFLICT DO NOTHING RETURNING. A copy of a message later in
// the batch answers already_applied. With a guard switched off the lab runs
// the messages one at a time instead.
func (c *Consumers) HandleOrderConfirmedBatch(msgs []*message.Message) []error {
	errs := make([]error, len(msgs))
	if len(msgs) <= 1 {
		for i, m := range msgs {
			errs[i] = c.HandleOrderConfirmed(m)
		}
		return errs
	}
	items, ids := c.newConfirmedItems(msgs, errs)
	ctx := telemetry.BatchContext(msgs[0].Context()) // the set's statements
	seen, err := inbox.SeenBatch(ctx, c.q, HandlerOrderConfirmed, ids)
	if err != nil {
		for i, it := range items {
			if errs[i] == nil {
				errs[i] = c.recordBatched(it.msg.Context(), it.run, err)
			}
		}
		return errs
	}
	c.callProvider(items, errs, seen)
	c.logProviderAnswers(ctx, items, errs)
	inserted := c.writeInbox(ctx, items, errs)
	for i, it := range items {
		switch {
		case errs[i] != nil:
		case it.first != i:
			// A later copy of a message of this batch: what its redelivery
			// would get once the first copy is done.
			if err := errs[it.first]; err != nil {
				errs[i] = c.recordBatched(it.msg.Context(), it.run, fmt.Errorf("the first copy of message %s in this batch failed: %w", it.msg.UUID, err))
				continue
			}
			it.run.Answer(it.msg.Context(), effect.ConfirmationDelivered, effect.Inbox, effect.AlreadyApplied, time.Now())
			errs[i] = c.recordBatched(it.msg.Context(), it.run, nil)
		case it.sent.ID != "":
			outcome := effect.Applied
			if inserted[it.msg.UUID] != it {
				outcome = effect.AlreadyApplied
			}
			it.delivered.End(outcome)
			errs[i] = c.recordBatched(it.msg.Context(), it.run, nil)
		}
	}
	return errs
}

// confirmedItem is one message of an order_confirmed batch.
type confirmedItem struct {
	i                       int
	msg                     *message.Message
	orderID                 uuid.UUID
	run                     *telemetry.Run
	delivered, notification *telemetry.Step
	sendCtx                 context.Context // the provider step's; nil: no call
	sent                    notify.Sent
	claimed                 bool // sent before, by the e-mail's claim: no call, nothing to log
	claim                   notify.Claimed
	held                    bool // claim is this item's, to settle or give back after its call
	// first is the index of the first copy of this message id in the
	// batch (i itself for the first); round counts the copies before it.
	first, round int
}

// newConfirmedItems decodes msgs (a message that cannot be decoded is
// answered in errs at once: permanent) and returns their items and the
// distinct message ids of the decoded ones.
func (c *Consumers) newConfirmedItems(msgs []*message.Message, errs []error) ([]*confirmedItem, []string) {
	items := make([]*confirmedItem, len(msgs))
	firstOf := map[string]int{}
	copies := map[string]int{}
	var ids []string
	for i, m := range msgs {
		it := &confirmedItem{i: i, msg: m, run: c.newExecution(HandlerOrderConfirmed, m.UUID), first: i}
		items[i] = it
		p, err := messages.DecodeOrderConfirmed(m.Payload)
		if err != nil {
			errs[i] = c.recordBatched(m.Context(), it.run, permanent(err))
			continue
		}
		it.orderID = p.OrderID
		it.run.OrderID = uuid.NullUUID{UUID: p.OrderID, Valid: true}
		m.SetContext(telemetry.WithOrderID(m.Context(), p.OrderID.String()))
		it.round = copies[m.UUID]
		copies[m.UUID]++
		if f, dup := firstOf[m.UUID]; dup {
			it.first = f
			continue
		}
		firstOf[m.UUID] = i
		ids = append(ids, m.UUID)
	}
	return items, ids
}

// callProvider makes the calls of the batch: for each item that stands on
// its own (first copy, or every copy when the inbox is off) and was not
// seen before. The calls of a round run side by side, at most
// maxProviderCalls at once; round k holds the k-th copy of each message,
// so a copy calls after the one before it, as its redelivery would.
func (c *Consumers) callProvider(items []*confirmedItem, errs []error, seen map[string]bool) {
	rounds := 0
	for i, it := range items {
		if errs[i] != nil || it.first != i {
			continue
		}
		mctx := it.msg.Context()
		var inboxCtx context.Context
		inboxCtx, it.delivered = it.run.Begin(mctx, effect.ConfirmationDelivered, effect.Inbox)
		if seen[it.msg.UUID] {
			it.delivered.End(effect.AlreadyApplied)
			errs[i] = c.recordBatched(mctx, it.run, nil)
			continue
		}
		it.sendCtx, it.notification = it.run.Begin(inboxCtx, effect.NotificationSent, effect.NotificationClaim)
		if !c.claim(it, errs) {
			continue
		}
		rounds = max(rounds, it.round+1)
	}
	slots := make(chan struct{}, maxProviderCalls)
	for round := range rounds {
		var wg sync.WaitGroup
		for i, it := range items {
			if errs[i] != nil || it.first != i || it.round != round || it.sendCtx == nil || it.claimed {
				continue
			}
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				c.send(it, errs)
			}()
		}
		wg.Wait()
	}
}

// closeClaims settles the claims of the batch whose answers are logged, and
// gives back the others, in one goroutine, after the log: a crash before a
// settle leaves its claim to be taken over and the provider asked again.
func (c *Consumers) closeClaims(items []*confirmedItem, errs []error) {
	for i, it := range items {
		if it.first == i && it.held {
			if err := c.closeClaim(it.sendCtx, it.claim, it.sent, errs[i]); err != nil && errs[i] == nil {
				errs[i] = c.recordBatched(it.msg.Context(), it.run, err)
			}
		}
	}
}

// claim takes the e-mail's claim of it, one goroutine for the batch (the
// database may be one transaction). It reports whether the provider is to
// be called: not when the claim was found sent (it.claimed, answered) or
// could not be taken (its error in errs).
func (c *Consumers) claim(it *confirmedItem, errs []error) bool {
	cl, err := c.guards.ClaimNotice(it.sendCtx, c.q, it.orderID, notify.TemplateOrderConfirmed, notify.MessageKey(it.msg.UUID))
	switch {
	case err != nil: // a claim held elsewhere is "not now": the batch's retry comes back to it
		errs[it.i] = c.recordBatched(it.msg.Context(), it.run, err)
		return false
	case cl.Sent:
		it.sent, it.claimed = alreadySent(cl), true
		return false
	}
	it.claim, it.held = cl, true
	return true
}

// send makes the call of it and keeps the answer in it.sent, or its error
// in errs.
func (c *Consumers) send(it *confirmedItem, errs []error) {
	mctx := it.msg.Context()
	sent, err := c.callClaimed(it.sendCtx, it.claim, it.orderID, notify.TemplateOrderConfirmed)
	switch {
	case errors.Is(err, notify.ErrRejected):
		errs[it.i] = c.recordBatched(mctx, it.run, permanent(err))
	case err != nil:
		errs[it.i] = c.recordBatched(mctx, it.run, err)
		notify.WaitRetryAfter(mctx, errs[it.i])
	default:
		it.sent = sent
	}
}

// logProviderAnswers writes the provider's answers of the batch in one
// statement, and then, for each message answered, ends its provider step
// and fires the fault point between the call and the inbox row.
func (c *Consumers) logProviderAnswers(ctx context.Context, items []*confirmedItem, errs []error) {
	var log queries.NotificationLogInsertBatchParams
	log.Template = notify.TemplateOrderConfirmed
	for i, it := range items {
		if errs[i] != nil || it.first != i || it.sent.ID == "" || it.claimed {
			continue
		}
		log.OrderIds = append(log.OrderIds, it.orderID)
		log.MessageIds = append(log.MessageIds, it.msg.UUID)
		log.Keys = append(log.Keys, it.sent.Key)
		log.NotificationIds = append(log.NotificationIds, it.sent.ID)
		log.Replayed = append(log.Replayed, it.sent.Replayed)
	}
	if len(log.MessageIds) > 0 {
		if err := c.q.NotificationLogInsertBatch(ctx, log); err != nil {
			err = fmt.Errorf("log provider answers: %w", err)
			for i, it := range items {
				if errs[i] == nil && it.first == i && it.sent.ID != "" {
					errs[i] = c.recordBatched(it.msg.Context(), it.run, err)
				}
			}
		}
	}
	c.closeClaims(items, errs)
	for i, it := range items {
		if errs[i] != nil || it.first != i || it.sent.ID == "" {
			continue
		}
		outcome := effect.Applied
		if it.sent.Replayed {
			outcome = effect.AlreadyApplied
		}
		it.notification.End(outcome)
		if err := c.faults.Hit(FaultAfterProviderCall); err != nil {
			errs[i] = c.recordBatched(it.msg.Context(), it.run, err)
		}
	}
}

// writeInbox writes the inbox rows of the messages answered, in one
// INSERT ... ON CONFLICT DO NOTHING RETURNING, each message id once (the
// first of its copies answered, when every copy called: the inbox off).
// It returns, for each message id the INSERT wrote, the item whose row it
// is: that one is applied, every other copy already_applied, as each
// copy's own INSERT would answer one by one.
func (c *Consumers) writeInbox(ctx context.Context, items []*confirmedItem, errs []error) map[string]*confirmedItem {
	var inbox queries.ConsumerInboxInsertBatchParams
	inbox.Consumer = HandlerOrderConfirmed
	writer := map[string]*confirmedItem{}
	for i, it := range items {
		if errs[i] != nil || it.first != i || it.sent.ID == "" || writer[it.msg.UUID] != nil {
			continue
		}
		writer[it.msg.UUID] = it
		inbox.MessageIds = append(inbox.MessageIds, it.msg.UUID)
		inbox.OrderIds = append(inbox.OrderIds, it.orderID)
	}
	inserted := map[string]*confirmedItem{}
	if len(inbox.MessageIds) == 0 {
		return inserted
	}
	got, err := c.q.ConsumerInboxInsertBatch(ctx, inbox)
	if err != nil {
		err = fmt.Errorf("write inbox: %w", err)
		for i, it := range items {
			if errs[i] == nil && it.first == i && it.sent.ID != "" {
				errs[i] = c.recordBatched(it.msg.Context(), it.run, err)
			}
		}
		return inserted
	}
	for _, id := range got {
		inserted[id] = writer[id]
	}
	return inserted
}
