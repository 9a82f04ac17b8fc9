package consumer

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/poison"
)

// RouterConfig tunes retries and shutdown. Zero values take the defaults.
type RouterConfig struct {
	MaxRetries           int           // in-process retries of a transient failure before a nack (5)
	RetryInitialInterval time.Duration // the first backoff (100ms, doubling up to 2s)
	// CloseTimeout is how long in-flight handlers get to finish and be acked
	// at shutdown (10s, broker.NewDraining); the rest is redelivered.
	CloseTimeout time.Duration
	Outer        []message.HandlerMiddleware // once per delivery, around the policy (tracing)
	Inner        []message.HandlerMiddleware // inside the retries, around the handler
	Skip         []string                    // topics read in batches instead (BatchLoop)
}

// NewRouter subscribes every consumer of Subscriptions on b, behind the failure policy:
//
//   - a permanent failure (malformed payload, unknown order, a request the
//     provider refuses) goes to the poison queue at once, with its reason;
//   - a panic is retried, then poisoned: a handler that panics on a message
//     will panic again;
//   - any other failure is transient: retried with exponential backoff, then
//     returned to the broker (nack), which redelivers it later.
//
// PoisonQueue wraps Retry: a message is poisoned only once Retry gives up.
func NewRouter(b *broker.Broker, c *Consumers, poisonQueue *poison.Store, logger watermill.LoggerAdapter, cfg RouterConfig) (*message.Router, error) {
	closeTimeout := cmp.Or(cfg.CloseTimeout, 10*time.Second)
	r, err := message.NewRouter(message.RouterConfig{CloseTimeout: closeTimeout}, logger)
	if err != nil {
		return nil, fmt.Errorf("create router: %w", err)
	}
	toPoison, err := middleware.PoisonQueueWithFilter(poisonQueue, poison.Topic, func(err error) bool {
		return IsPermanent(err) || isPanic(err)
	})
	if err != nil {
		return nil, fmt.Errorf("create poison queue middleware: %w", err)
	}
	r.AddMiddleware(cfg.Outer...)
	r.AddMiddleware(
		toPoison,
		middleware.Retry{
			MaxRetries:      cmp.Or(cfg.MaxRetries, 5),
			InitialInterval: cmp.Or(cfg.RetryInitialInterval, 100*time.Millisecond),
			MaxInterval:     2 * time.Second,
			Multiplier:      2,
			ShouldRetry:     func(p middleware.RetryParams) bool { return !IsPermanent(p.Err) },
			Logger:          logger,
		}.Middleware,
		middleware.Recoverer,
	)
	r.AddMiddleware(cfg.Inner...)
	for _, s := range Subscriptions() {
		if slices.Contains(cfg.Skip, s.Topic) {
			continue
		}
		sub, err := b.Subscriber(s.Group)
		if err != nil {
			return nil, err
		}
		// The drain gets 3/4 of the close timeout; closing, writing the acks, the rest.
		r.AddConsumerHandler(s.Group, s.Topic, broker.NewDraining(sub, closeTimeout*3/4), func(msg *message.Message) error {
			return s.Handle(c, msg)
		})
	}
	return r, nil
}

func isPanic(err error) bool {
	var p middleware.RecoveredPanicError
	return errors.As(err, &p)
}
