package consumer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// refundAsk is a refund request caught half way, as refund.Request runs
// it: a transaction that holds the order's row lock, and later records
// the refund intent and commits.
type refundAsk struct {
	tx pgx.Tx
	o  queries.Order
}

// askRefund begins the request and takes o's row lock with lock, a
// locking clause ("FOR UPDATE", as refund.Request takes it).
func askRefund(t *testing.T, b *bundle, o queries.Order, lock string) *refundAsk {
	t.Helper()
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `SELECT id FROM orders WHERE id = $1 `+lock, o.ID); err != nil {
		t.Fatal(err)
	}
	return &refundAsk{tx: tx, o: o}
}

// commit records the refund intent and commits, releasing the lock.
func (r *refundAsk) commit(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := queries.New(r.tx).RefundRequestInsert(ctx, queries.RefundRequestInsertParams{
		OrderID: r.o.ID, Reason: messages.ReasonCustomerRequest,
		IdempotencyKey: pgtype.Text{String: "refund-" + r.o.ID.String(), Valid: true},
		Fingerprint:    pgtype.Text{String: "fp", Valid: true}, ResponseBody: []byte(`{}`),
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// credited counts o's commission rows in the ledger.
func credited(t *testing.T, b *bundle, o queries.Order) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM ledger_entries WHERE order_id = $1 AND entry_type = 'affiliate_commission'`, o.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A customer asks for the refund of a paid order between order_paid's step
// 1 and step 2: the request holds the order's row lock, step 2 comes to
// wait for it, and the request then records the refund intent and commits.
// Step 2 must see the intent and credit nothing. Read in the statement that
// waited for the lock (an EXISTS beside FOR UPDATE), the intent is not in
// that statement's snapshot, taken before the wait: the commission is
// credited, to be reversed when the refund is applied. Without the check
// (a step 2 that credits whatever the refund intent), the same.
func TestCommissionSeesARefundAskedWhileItWaitedForTheLock(t *testing.T) {
	t.Parallel()

	t.Run("per message", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		o := b.newOrder(t)
		b.faults.Arm(consumer.FaultAfterMarkPaid, fault.Fail, 1) // step 1 done, step 2 not yet
		if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_p")); !errors.Is(err, fault.ErrInjected) {
			t.Fatalf("order_paid: %v, want the injected failure", err)
		}
		ask := askRefund(t, b, o, "FOR UPDATE")
		done := make(chan error, 1)
		go func() { done <- deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_p")) }()
		if w := pgtest.WaitLockWaiters(t, b.pool, 1); !strings.Contains(w[0].Query, "FOR UPDATE") {
			t.Fatalf("the redelivery waits for the request at %q, want step 2's lock", w[0].Query)
		}
		ask.commit(t)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := credited(t, b, o); n != 0 {
			t.Fatalf("%d commission row(s) for an order whose refund was asked before step 2 took its lock, want 0", n)
		}
	})

	t.Run("batch", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		o, other := b.newOrder(t), b.newOrder(t)
		msgs := []*message.Message{orderPaid(t, o, "evt_p"), orderPaid(t, other, "evt_p")}
		// The request holds o's lock in the mode the intent's foreign key
		// takes anyway, FOR KEY SHARE: step 1 (FOR NO KEY UPDATE) goes
		// through, step 2 (FOR UPDATE) waits. Under FOR UPDATE it would
		// have to take the lock between step 1's commit and step 2's
		// start, a race.
		ask := askRefund(t, b, o, "FOR KEY SHARE")
		done := make(chan []error, 1)
		go func() { done <- b.c.HandleOrderPaidBatch(copies(msgs)) }()
		if w := pgtest.WaitLockWaiters(t, b.pool, 1); !strings.Contains(w[0].Query, "FOR UPDATE") {
			t.Fatalf("the batch waits for the request at %q, want step 2's lock", w[0].Query)
		}
		ask.commit(t)
		for i, err := range <-done {
			if err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
		}
		if n := credited(t, b, o); n != 0 {
			t.Fatalf("%d commission row(s) for an order whose refund was asked before step 2 took its lock, want 0", n)
		}
		if n := credited(t, b, other); n != 1 {
			t.Fatalf("%d commission row(s) for the order no one refunds, want 1", n)
		}
	})
}
