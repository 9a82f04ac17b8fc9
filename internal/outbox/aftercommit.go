package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// PublishAfterCommit is the mistake Publish prevents, the dual write: it
// returns a function of Publish's shape that writes nothing in tx and holds
// msgs, to be sent straight to the broker through pub once the handler's
// work has committed (Hold's send). A crash between that commit and the send
// loses the messages for good: the state they announce is committed, and no
// redelivery will move it again to send them. The lab wires it in Publish's
// place with the guard switched off (--without outbox).
func PublishAfterCommit(pub message.Publisher) func(ctx context.Context, tx pgx.Tx, topic string, msgs ...*message.Message) error {
	return func(ctx context.Context, _ pgx.Tx, topic string, msgs ...*message.Message) error {
		h, ok := ctx.Value(heldKey{}).(*held)
		if !ok {
			return errors.New("publish after commit: the context holds no outbox.Hold")
		}
		for _, m := range msgs {
			telemetry.InjectMessage(ctx, m)
		}
		h.add(func() error {
			if err := pub.Publish(topic, msgs...); err != nil {
				return fmt.Errorf("publish %s: %w", topic, err)
			}
			return nil
		})
		return nil
	}
}

// Hold returns a copy of ctx that holds what PublishAfterCommit is given
// under it, and send, which publishes that, once. Call send when the work
// done under ctx has committed; if it did not, drop it.
func Hold(ctx context.Context) (context.Context, func() error) {
	h := &held{}
	return context.WithValue(ctx, heldKey{}, h), h.send
}

type heldKey struct{}

type held struct {
	mu    sync.Mutex
	sends []func() error
}

func (h *held) add(send func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sends = append(h.sends, send)
}

func (h *held) send() error {
	h.mu.Lock()
	sends := h.sends
	h.sends = nil
	h.mu.Unlock()
	for _, send := range sends {
		if err := send(); err != nil {
			return err
		}
	}
	return nil
}
