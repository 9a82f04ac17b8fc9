package consumer

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// InOneTransaction turns a per-message handler into a batch handler (for
// Batched and BatchLoop) whose messages share one transaction: the batch
// mode of the rare topics (the refunds), where a set-based form of each
// guard would teach nothing new. Each message is handled as on its own,
// by the same handler and the same guards, but its postgres.InTx steps are
// savepoints of the batch's transaction (postgres.WithEnclosingTx) and its
// other statements run on it (postgres.Routed): one COMMIT for the batch
// instead of one or more per message.
//
// A message's failure rolls back to its savepoint and answers for that
// message alone; the others commit. A failure of the COMMIT itself (or a
// statement that failed outside a savepoint and so aborted the
// transaction) leaves nothing of the batch, and every message answers it,
// as a transient error: the batch comes again, and whatever the handlers
// did outside the database (a gateway's refund, an e-mail) meets its
// idempotency key. Under CONSUMER_POSITION=with-effects the batch's
// transaction is itself a savepoint of the reader's.
//
// Messages of one order are handled in batch order, in one transaction;
// the row locks they take are held until the batch commits.
func InOneTransaction(handle func(*Consumers, *message.Message) error) func(*Consumers, []*message.Message) []error {
	return func(c *Consumers, msgs []*message.Message) []error {
		errs := make([]error, len(msgs))
		if len(msgs) == 0 {
			return errs
		}
		outer := make([]context.Context, len(msgs))
		for i, m := range msgs {
			outer[i] = m.Context()
		}
		ctx := context.WithoutCancel(msgs[0].Context())
		err := postgres.InTx(ctx, c.pool, func(tx pgx.Tx) error {
			for i, m := range msgs {
				m.SetContext(postgres.WithEnclosingTx(outer[i], tx))
				errs[i] = handle(c, m)
			}
			return nil
		})
		// The transaction has ended: what comes after (the execution log,
		// the poison queue) runs where the messages came from.
		for i, m := range msgs {
			m.SetContext(outer[i])
		}
		if err != nil {
			err = fmt.Errorf("a batch of %d in one transaction: %w", len(msgs), err)
			for i := range errs {
				errs[i] = err
			}
		}
		return errs
	}
}
