package switches

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

// ErrSkippedAsSeen is what DedupeExecutions logs for each delivery it drops.
var ErrSkippedAsSeen = errors.New("message id already seen: execution skipped")

// DedupeExecutions is THE CLASSIC WRONG FIX, kept so the scenario
// "execution-dedupe" can show what it costs: "skip the handler when its
// message id was already seen". It is never on in production; serve turns it
// on only with --dedupe-executions.
//
// It is watermill's own Deduplicator keyed by (handler, message id) with the
// library's in-memory store, plugged into RouterConfig.Inner, right around
// the handler and inside the retries. Like every execution dedupe, it marks
// the message seen BEFORE the handler runs. When the handler then fails half
// way (step 1 committed, step 2 did not), the retry or the redelivery finds
// the id "already seen", skips the handler, and the message is acknowledged:
// the commission is never released. Avoiding duplicate execution is not
// avoiding duplicate effects; each effect needs its own guard (see
// consumer.HandleOrderPaid), and those guards make the dedupe pointless where it
// works and harmful where it does not.
//
// Marking after the handler instead does not save it: a crash between the
// effects and the mark repeats the effects, and two concurrent deliveries both
// pass the check. The store is per process and forgets after window, so a
// second worker, or a restart, does not see the marks at all.
//
// window is how long an id is remembered (default 10 minutes). Skipped
// deliveries are logged as errors (ErrSkippedAsSeen), so the loss can at
// least be found in the log.
func DedupeExecutions(window time.Duration, logger watermill.LoggerAdapter) (message.HandlerMiddleware, error) {
	seen, err := middleware.NewMapExpiringKeyRepository(cmp.Or(window, 10*time.Minute))
	if err != nil {
		return nil, fmt.Errorf("create execution dedupe store: %w", err)
	}
	d := &middleware.Deduplicator{
		KeyFactory: func(msg *message.Message) (string, error) {
			return message.HandlerNameFromCtx(msg.Context()) + "/" + msg.UUID, nil
		},
		Repository: seen,
		Timeout:    time.Second,
	}
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			dup, err := d.IsDuplicate(msg) // marks the id seen, before h runs
			if err != nil {
				return nil, fmt.Errorf("execution dedupe: %w", err)
			}
			if dup {
				logger.Error("execution dedupe: handler skipped and message acked", ErrSkippedAsSeen, watermill.LogFields{
					"handler": message.HandlerNameFromCtx(msg.Context()), "message_uuid": msg.UUID,
				})
				return nil, nil
			}
			return h(msg)
		}
	}, nil
}
