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
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// OneAtATime turns a per-message handler into a batch handler that runs
// each message alone, in the handler's own transactions: the batch mode of
// refund_confirmed, whose e-mail claim must be committed before the
// provider is called (notify.Claim). Inside one transaction with the batch
// (InOneTransaction), a worker dying after the call rolled the claim back
// with everything else, and the redelivery sent the e-mail again without
// asking the provider: the crash matrix found it in batch mode
// (docs/crash-matrix.md).
func OneAtATime(handle func(*Consumers, *message.Message) error) func(*Consumers, []*message.Message) []error {
	return func(c *Consumers, msgs []*message.Message) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			errs[i] = handle(c, m)
		}
		return errs
	}
}

// InOneTransaction turns a per-message handler into a batch handler whose
// messages share one transaction: the batch mode of the refund topics,
// where a set form of each guard would teach nothing new. Each message is
// handled by the same handler and guards, its postgres.InTx steps
// savepoints of the batch's transaction: one COMMIT for the batch. A
// message's failure rolls back to its savepoint and answers for it alone; a
// failed COMMIT answers for every message, as a transient error. Before the
// first message the batch locks every order its messages name, in id
// order, then their live reservations' SKUs, in SKU order (lockInOrder):
// the order every transaction that locks several takes them in, so batches
// wait for one another instead of deadlocking
// (docs/techniques/guards-in-bulk.md).
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
		ctx := context.WithoutCancel(telemetry.BatchContext(msgs[0].Context()))
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
