package consumer_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// refundBatchMeetsPaidBatch handles refunds, order_refunded messages, as
// one batch in one transaction (InOneTransaction), and paid as an
// order_paid batch (HandleOrderPaidBatch) that starts once the refund
// batch has handled its first message; the refund batch goes on only once
// the order_paid batch waits for a lock. Every message must be answered
// nil, and no execution may have failed: a deadlock (SQLSTATE 40P01) is
// answered, and recorded, as a failure of whichever batch PostgreSQL
// rolled back.
func refundBatchMeetsPaidBatch(t *testing.T, b *bundle, refunds, paid []*message.Message) {
	t.Helper()
	answers := make(chan []error, 1)
	first := true
	handle := func(c *consumer.Consumers, m *message.Message) error {
		err := c.HandleOrderRefunded(m)
		if first {
			first = false
			go func() { answers <- b.c.HandleOrderPaidBatch(copies(paid)) }()
			pgtest.WaitLockWaiters(t, b.pool, 1)
		}
		return err
	}
	for i, err := range consumer.InOneTransaction(handle)(b.c, copies(refunds)) {
		if err != nil {
			t.Errorf("refund %d of %d: %v", i, len(refunds), err)
		}
	}
	for i, err := range <-answers {
		if err != nil {
			t.Errorf("order_paid %d of %d: %v", i, len(paid), err)
		}
	}
	rows, err := b.pool.Query(context.Background(), `SELECT handler || ': ' || error FROM executions WHERE error IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	failed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range failed {
		t.Errorf("failed execution: %s", f)
	}
}

// A batch of refunds handled in one transaction and an order_paid batch
// at the same moment never deadlock: InOneTransaction locks the batch's
// orders in id order, and the SKUs it may give back in SKU order, before
// its first message, as the order_paid batch locks them. Handled as they
// come, the refunds would lock order after order in message order.
func TestRefundBatchAndOrderPaidBatchDoNotDeadlock(t *testing.T) {
	t.Parallel()

	// The same orders, the refunds in descending id order, the payments
	// in ascending: the refund batch holds the last order and waits for
	// the one before it, which the order_paid batch holds while it waits
	// for the last.
	t.Run("on the orders", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		orders := make([]queries.Order, 4)
		for i := range orders {
			orders[i] = b.newOrder(t)
		}
		slices.SortFunc(orders, func(x, y queries.Order) int { return bytes.Compare(x.ID[:], y.ID[:]) }) // PostgreSQL's uuid order
		var refunds, paid []*message.Message
		for _, o := range orders {
			refunds = append(refunds, orderRefunded(t, o, "evt_r"))
			paid = append(paid, orderPaid(t, o, "evt_p"))
		}
		slices.Reverse(refunds)
		refundBatchMeetsPaidBatch(t, b, refunds, paid)
		for _, o := range orders {
			if s := b.status(t, o); s != "refunded" {
				t.Errorf("order %s is %s, want refunded", o.ID, s)
			}
		}
	})

	// Other orders, the same SKUs: the refund batch gives sku-b back for
	// its first order and waits for sku-a for its second, which the
	// order_paid batch, taking its SKUs in SKU order, holds while it waits
	// for sku-b.
	t.Run("on the SKUs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		refundB, refundA := newStockOrderOf(t, b, "sku-b"), newStockOrderOf(t, b, "sku-a")
		paidA, paidB := newStockOrderOf(t, b, "sku-a"), newStockOrderOf(t, b, "sku-b")
		for _, o := range []queries.Order{refundB, refundA} {
			if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_p")); err != nil {
				t.Fatal(err)
			}
		}
		refundBatchMeetsPaidBatch(t, b,
			[]*message.Message{orderRefunded(t, refundB, "evt_r"), orderRefunded(t, refundA, "evt_r")},
			[]*message.Message{orderPaid(t, paidA, "evt_p"), orderPaid(t, paidB, "evt_p")})
		for _, s := range []string{"sku-a", "sku-b"} { // one unit given back, one taken
			if got := available(t, b, s); got != 1000-1 {
				t.Errorf("%s: %d left, want %d", s, got, 1000-1)
			}
		}
	})
}
