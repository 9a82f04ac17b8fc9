package switches

import (
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/outbox"
)

// HoldAfterCommit is the router middleware the outbox's mistake needs
// (outbox.PublishAfterCommit): around each run of a handler it holds what
// the mistake was given, and sends it straight to the broker once the
// handler's work is done and it returned nil, after its commits. A crash or
// a failure before that loses it, as a publish after the commit does.
func HoldAfterCommit(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		ctx, send := outbox.Hold(msg.Context())
		msg.SetContext(ctx)
		out, err := h(msg)
		if err == nil {
			err = send()
		}
		return out, err
	}
}

// HoldWhileOutboxOff is HoldAfterCommit for the runs that start with the
// outbox's guard off in s: with it on, nothing needs holding and the run is
// the handler's alone. A run that starts before the lab page switches the
// guard off and reaches the mistake after fails, as a run with no hold does,
// and its redelivery is held.
func HoldWhileOutboxOff(s *Set) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		held := HoldAfterCommit(h)
		return func(msg *message.Message) ([]*message.Message, error) {
			if s.Off(effect.GuardOutbox) {
				return held(msg)
			}
			return h(msg)
		}
	}
}

// Batches returns batch while s has every consumer guard on, and otherwise
// a batch handler that hands each message to one, the per-message handler,
// in turn: batch mode uses the guards' set forms, and a mistake is taught
// one message at a time, so no mistake has a set form. Each message's run
// is held as HoldAfterCommit holds it. A nil s returns batch.
func Batches(s *Set, batch func([]*message.Message) []error, one func(*message.Message) error) func([]*message.Message) []error {
	if s == nil {
		return batch
	}
	guards := consumerGuards()
	held := HoldAfterCommit(func(msg *message.Message) ([]*message.Message, error) { return nil, one(msg) })
	return func(msgs []*message.Message) []error {
		if !s.AnyOff(guards...) {
			return batch(msgs)
		}
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			_, errs[i] = held(m)
		}
		return errs
	}
}
