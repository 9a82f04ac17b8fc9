package consumer

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
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
// the row locks they take are held until the batch commits. So before the
// first message the batch locks every order its messages name, in id order,
// then the SKUs their live reservations hold, in SKU order (lockInOrder):
// the order every transaction that locks several orders or SKUs takes them
// in (HandleOrderPaidBatch's steps, stock.Reserve and stock.Release). Each
// message then locks only rows the batch holds already. Locking as the
// messages come instead, order after order, would hold one order while
// waiting for another that an order_paid batch, locking in id order, holds
// while waiting for the first: a deadlock, the batch rolled back whole and
// every refund of it asked of the gateway again.
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
			if err := lockInOrder(ctx, queries.New(tx), msgs); err != nil {
				return err
			}
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

// lockInOrder locks, in tx, the orders msgs name (each payload's
// order_id, which every message of the flow carries) in id order
// (OrderLockBatchForUpdate), then the SKUs of their live reservations in
// SKU order (StockLockForRelease). A message that names no order locks
// nothing here; its handler answers for it.
func lockInOrder(ctx context.Context, q *queries.Queries, msgs []*message.Message) error {
	var ids []uuid.UUID
	for _, m := range msgs {
		var p struct {
			OrderID uuid.UUID `json:"order_id"`
		}
		if json.Unmarshal(m.Payload, &p) == nil && p.OrderID != uuid.Nil {
			ids = append(ids, p.OrderID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := q.OrderLockBatchForUpdate(ctx, ids); err != nil {
		return fmt.Errorf("lock the %d orders of the batch: %w", len(ids), err)
	}
	if err := q.StockLockForRelease(ctx, ids); err != nil {
		return fmt.Errorf("lock the stock of the batch's %d orders: %w", len(ids), err)
	}
	return nil
}
