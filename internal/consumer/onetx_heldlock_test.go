package consumer_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A batch handled in one transaction that starts while another
// transaction holds one of its orders waits for it holding nothing, so the
// other can go on to the batch's next order: InOneTransaction locks the
// orders in id order (OrderLockBatchForUpdate). The other transaction
// holds the lower id and, once the batch waits, takes the higher. It kills
// the mutant of OrderLockBatchForUpdate that locks in descending id order
// (ORDER BY o.id DESC): the batch would hold the higher id while it waits
// for the lower, and PostgreSQL would end one of the two with a deadlock
// (SQLSTATE 40P01). TestRefundBatchAndOrderPaidBatchDoNotDeadlock cannot
// tell: its second batch starts once the first holds every order.
func TestOneTransactionBatchWaitsForAHeldOrderHoldingNone(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	low, high := b.newOrder(t), b.newOrder(t)
	if bytes.Compare(low.ID[:], high.ID[:]) > 0 { // PostgreSQL's uuid order
		low, high = high, low
	}
	msgs := []*message.Message{orderPaid(t, low, "evt_p"), orderPaid(t, high, "evt_p")}

	other, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback(ctx) }()
	if err := queries.New(other).OrderLockBatchForUpdate(ctx, []uuid.UUID{low.ID}); err != nil {
		t.Fatalf("lock the lower order: %v", err)
	}
	answers := make(chan []error, 1)
	nothing := func(*consumer.Consumers, *message.Message) error { return nil }
	go func() { answers <- consumer.InOneTransaction(nothing)(b.c, copies(msgs)) }()
	pgtest.WaitLockWaiters(t, b.pool, 1)
	if err := queries.New(other).OrderLockBatchForUpdate(ctx, []uuid.UUID{high.ID}); err != nil {
		t.Errorf("the other transaction, locking the higher order: %v", err)
	}
	if err := other.Commit(ctx); err != nil {
		t.Errorf("commit the other transaction: %v", err)
	}
	for i, err := range <-answers {
		if err != nil {
			t.Errorf("message %d of %d: %v", i, len(msgs), err)
		}
	}
}
