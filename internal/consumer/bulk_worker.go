package consumer

import (
	"context"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/poison"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// BatchLoop consumes one topic a batch at a time
// (CONSUMER_BATCH_SIZE > 1), with the failure policy of the router
// (NewRouter) applied to each message of a batch:
//
//   - a message its handler settled (nil) is done;
//   - a permanent failure goes to the poison queue alone, with its reason,
//     and is done too: it never holds up the rest of its batch;
//   - a transient failure stops the batch there: the position moves past
//     the messages before it only, and the next read, after a backoff,
//     starts with it. The ones after it were applied already, or not: when
//     they come again their guards answer, as after any redelivery.
//
// Order per order holds: messages are handed to the handler in the order
// the topic holds them, and none is settled past an unsettled one.
type BatchLoop struct {
	Reader broker.BatchSource
	// Topic and Group name what is read, for the poison queue's record.
	Topic, Group string
	// Handle applies a batch and answers for each message, in order.
	Handle func(msgs []*message.Message) []error
	Poison *poison.Store
	Logger *slog.Logger
	// Poll is the wait after an empty read (default 100ms); Backoff the
	// first wait after a transient failure (default 100ms, doubling to 2s).
	Poll, Backoff time.Duration
	// Drain is how long a batch in flight when the loop is stopped may go
	// on; then its messages' contexts are cancelled (a provider call in
	// flight too), what had not finished fails as a transient error, and
	// comes again to the next worker, as the router's drain does
	// (broker.NewDraining). 0: the batch runs to its end.
	Drain time.Duration
	// Tracer and System trace each batch (telemetry.StartBatch); a nil
	// Tracer traces nothing.
	Tracer trace.TracerProvider
	System string
}

// Run reads and handles batches until ctx ends. A batch in flight when ctx
// ends is finished, its position moved: stopping never cuts one in half.
func (l *BatchLoop) Run(ctx context.Context) error {
	// handling is the messages' cancellation: not the loop's ctx, which
	// ends at the stop, but Drain after it.
	handling, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	if l.Drain > 0 {
		stop := context.AfterFunc(ctx, func() { time.AfterFunc(l.Drain, cut) })
		defer stop()
	}
	settle := func(msgs []*message.Message) int { return l.settle(handling, msgs) }
	l.Reader.Loop(ctx, l.Poll, l.Backoff, settle, func(err error) {
		l.Logger.WarnContext(ctx, "batch read failed; retrying", "topic", l.Topic, "group", l.Group, "err", err)
	})
	return nil
}

// settle hands msgs to the handler and returns how many, from the first,
// are done: applied, or in the poison queue.
func (l *BatchLoop) settle(handling context.Context, msgs []*message.Message) int {
	end := telemetry.StartBatch(l.Tracer, l.System, l.Topic, l.Group, msgs)
	for _, m := range msgs {
		// On the message's own context (a reader may have put its
		// transaction in it: broker.BatchReader.WithEffects), cancelled
		// with handling.
		ctx, cancel := context.WithCancel(m.Context())
		stop := context.AfterFunc(handling, cancel)
		defer stop()
		defer cancel()
		m.SetContext(ctx)
	}
	errs := l.Handle(msgs)
	end(errs)
	for i := range msgs {
		if i >= len(errs) {
			return i // no answer for it: not settled
		}
		err := errs[i]
		if err == nil {
			continue
		}
		if !IsPermanent(err) {
			return i
		}
		p := msgs[i].Copy()
		p.SetContext(msgs[i].Context())
		p.Metadata.Set(middleware.ReasonForPoisonedKey, err.Error())
		p.Metadata.Set(middleware.PoisonedTopicKey, l.Topic)
		p.Metadata.Set(middleware.PoisonedHandlerKey, l.Group)
		if perr := l.Poison.Publish(poison.Topic, p); perr != nil {
			l.Logger.Error("poison queue write failed; the message will be read again", "message_id", p.UUID, "err", perr)
			return i
		}
	}
	return len(msgs)
}
