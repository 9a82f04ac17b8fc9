package consumer

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// maxProviderCalls bounds the provider calls one batch has in flight.
const maxProviderCalls = 8

// HandleOrderConfirmedBatch sends the confirmations of a batch with the
// guards of HandleOrderConfirmed in their set-based form, and returns one
// error per message, in msgs' order, as HandleOrderPaidBatch does:
//
//   - the inbox, one look-up for the batch (ConsumerInboxSeenBatch): a
//     message handled before is acknowledged without a call;
//   - the provider's Idempotency-Key, the message id, on each call; the
//     calls of a batch run side by side, at most maxProviderCalls at once,
//     each on its own (a refusal, a "not now" or no answer is that
//     message's error alone);
//   - the answers logged in one statement, then the inbox rows in one
//     INSERT ... ON CONFLICT DO NOTHING RETURNING: the provider is called
//     before the inbox row, as in HandleOrderConfirmed, so a crash between
//     them repeats the call with the same key, and the provider answers
//     from its store.
//
// A message twice in a batch (a redelivery that caught up with the first
// copy) is called once; the later copy answers already_applied. With any
// lab lever switching a guard off, every message goes through
// HandleOrderConfirmed: the mistakes are written per message.
func (c *Consumers) HandleOrderConfirmedBatch(msgs []*message.Message) []error {
	errs := make([]error, len(msgs))
	if len(msgs) <= 1 || c.anyGuardOff() {
		for i, m := range msgs {
			errs[i] = c.HandleOrderConfirmed(m)
		}
		return errs
	}
	type item struct {
		i                       int
		msg                     *message.Message
		orderID                 uuid.UUID
		run                     *execution
		delivered, notification step
		sent                    notify.Sent
		first                   int // index of the first copy of this message id in the batch
	}
	items := make([]*item, len(msgs))
	firstOf := map[string]int{}
	var ids []string
	for i, m := range msgs {
		it := &item{i: i, msg: m, run: c.newExecution(HandlerOrderConfirmed, m.UUID), first: i}
		items[i] = it
		p, err := messages.DecodeOrderConfirmed(m.Payload)
		if err != nil {
			errs[i] = c.record(m.Context(), it.run, permanent(err))
			continue
		}
		it.orderID = p.OrderID
		it.run.orderID = uuid.NullUUID{UUID: p.OrderID, Valid: true}
		m.SetContext(telemetry.WithOrderID(m.Context(), p.OrderID.String()))
		if f, dup := firstOf[m.UUID]; dup {
			it.first = f
			continue
		}
		firstOf[m.UUID] = i
		ids = append(ids, m.UUID)
	}

	ctx := msgs[0].Context()
	seenList, err := c.q.ConsumerInboxSeenBatch(ctx, queries.ConsumerInboxSeenBatchParams{Consumer: HandlerOrderConfirmed, MessageIds: ids})
	if err != nil {
		err = fmt.Errorf("check inbox: %w", err)
		for i, it := range items {
			if errs[i] == nil {
				errs[i] = c.record(it.msg.Context(), it.run, err)
			}
		}
		return errs
	}
	seen := map[string]bool{}
	for _, id := range seenList {
		seen[id] = true
	}

	// The calls, for the first copy of each message not seen before.
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxProviderCalls)
	for i, it := range items {
		if errs[i] != nil || it.first != i {
			continue
		}
		mctx := it.msg.Context()
		var inboxCtx = mctx
		inboxCtx, it.delivered = it.run.begin(mctx, effect.ConfirmationDelivered, effect.Inbox)
		if seen[it.msg.UUID] {
			it.delivered.end(effect.AlreadyApplied)
			errs[i] = c.record(mctx, it.run, nil)
			continue
		}
		sendCtx, notification := it.run.begin(inboxCtx, effect.NotificationSent, effect.ProviderKey)
		it.notification = notification
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			sent, err := c.notifier.Send(sendCtx, it.msg.UUID, it.orderID, notify.TemplateOrderConfirmed)
			switch {
			case errors.Is(err, notify.ErrRejected):
				errs[it.i] = c.record(mctx, it.run, permanent(err))
			case err != nil:
				errs[it.i] = c.record(mctx, it.run, err)
				notify.WaitRetryAfter(mctx, errs[it.i])
			default:
				it.sent = sent
			}
		}()
	}
	wg.Wait()

	// The answers in one statement, then the fault point per message, then
	// the inbox rows in one statement.
	var log queries.NotificationLogInsertBatchParams
	log.Template = notify.TemplateOrderConfirmed
	for i, it := range items {
		if errs[i] != nil || it.first != i || it.sent.ID == "" {
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
					errs[i] = c.record(it.msg.Context(), it.run, err)
				}
			}
		}
	}
	var inbox queries.ConsumerInboxInsertBatchParams
	inbox.Consumer = HandlerOrderConfirmed
	for i, it := range items {
		if errs[i] != nil || it.first != i || it.sent.ID == "" {
			continue
		}
		outcome := effect.Applied
		if it.sent.Replayed {
			outcome = effect.AlreadyApplied
		}
		it.notification.end(outcome)
		if err := c.levers.Hit(FaultAfterProviderCall); err != nil {
			errs[i] = c.record(it.msg.Context(), it.run, err)
			continue
		}
		inbox.MessageIds = append(inbox.MessageIds, it.msg.UUID)
		inbox.OrderIds = append(inbox.OrderIds, it.orderID)
	}
	inserted := map[string]bool{}
	if len(inbox.MessageIds) > 0 {
		got, err := c.q.ConsumerInboxInsertBatch(ctx, inbox)
		if err != nil {
			err = fmt.Errorf("write inbox: %w", err)
			for i, it := range items {
				if errs[i] == nil && it.first == i && it.sent.ID != "" {
					errs[i] = c.record(it.msg.Context(), it.run, err)
				}
			}
		}
		for _, id := range got {
			inserted[id] = true
		}
	}
	for i, it := range items {
		switch {
		case errs[i] != nil:
		case it.first != i:
			// A later copy of a message of this batch: what its redelivery
			// would get once the first copy is done.
			if err := errs[it.first]; err != nil {
				errs[i] = c.record(it.msg.Context(), it.run, fmt.Errorf("the first copy of message %s in this batch failed: %w", it.msg.UUID, err))
				continue
			}
			_, d := it.run.begin(it.msg.Context(), effect.ConfirmationDelivered, effect.Inbox)
			d.end(effect.AlreadyApplied)
			errs[i] = c.record(it.msg.Context(), it.run, nil)
		case it.sent.ID != "":
			outcome := effect.Applied
			if !inserted[it.msg.UUID] {
				outcome = effect.AlreadyApplied
			}
			it.delivered.end(outcome)
			errs[i] = c.record(it.msg.Context(), it.run, nil)
		}
	}
	return errs
}
