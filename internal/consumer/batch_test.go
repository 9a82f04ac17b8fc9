package consumer_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/stock"
)

// deliverBatch hands the batch handler fresh copies of msgs, as a broker
// redelivery does, and fails the test on any error.
func deliverBatch(t *testing.T, b *bundle, msgs []*message.Message) {
	t.Helper()
	for i, err := range b.c.HandleOrderPaidBatch(copies(msgs)) {
		if err != nil {
			t.Fatalf("message %d of %d: %v", i, len(msgs), err)
		}
	}
}

func copies(msgs []*message.Message) []*message.Message {
	out := make([]*message.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Copy()
		out[i].SetContext(context.Background())
	}
	return out
}

// newOrders creates n pending orders and the order_paid of each.
func newOrders(t *testing.T, b *bundle, n int) ([]queries.Order, []*message.Message) {
	t.Helper()
	orders := make([]queries.Order, n)
	msgs := make([]*message.Message, n)
	for i := range orders {
		orders[i] = b.newOrder(t)
		msgs[i] = orderPaid(t, orders[i], "evt_1")
	}
	return orders, msgs
}

// wantEachEffectOnce checks the audit of every order: executions as given,
// and paid, commission and confirmation exactly once.
func wantEachEffectOnce(t *testing.T, b *bundle, orders []queries.Order, executions int64) {
	t.Helper()
	for _, o := range orders {
		a := b.audit(t, o.ID)
		if a.ExecutionsOrderPaid != executions || a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 {
			t.Fatalf("order %s: executions %d (want %d), paid %d, commission %d, confirmation_enqueued %d (want 1 each)",
				o.ID, a.ExecutionsOrderPaid, executions, a.Paid, a.Commission, a.ConfirmationEnqueued)
		}
	}
}

// Every message of a batch of 50 orders is in the batch twice: each order's
// effects happen once, and each message still has its own execution.
func TestOrderPaidBatchWithEveryMessageTwiceAppliesEachEffectOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	orders, msgs := newOrders(t, b, 50)
	deliverBatch(t, b, append(slices.Clone(msgs), msgs...))
	wantEachEffectOnce(t, b, orders, 2)
}

// A worker killed before its acks gets its whole batch again: executions
// double, effects stay once.
func TestOrderPaidBatchRedeliveredWholeAppliesEachEffectOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	orders, msgs := newOrders(t, b, 50)
	deliverBatch(t, b, msgs)
	deliverBatch(t, b, msgs)
	wantEachEffectOnce(t, b, orders, 2)
}

// One message of the batch names an order that does not exist: that
// message alone fails for good (the poison queue), the 49 others are
// applied in the same attempt, one execution each.
func TestOrderPaidBatchIsolatesAnUnknownOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	orders, msgs := newOrders(t, b, 49)
	unknown := orderPaid(t, queries.Order{ID: uuid.New(), AmountCents: 10000}, "evt_1")
	msgs = slices.Insert(msgs, 20, unknown)
	errs := b.c.HandleOrderPaidBatch(copies(msgs))
	for i, err := range errs {
		if i == 20 {
			if !consumer.IsPermanent(err) {
				t.Fatalf("unknown order: %v, want a permanent error", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	wantEachEffectOnce(t, b, orders, 1)
}

// twin is one order shape of the comparison below: how to make it and the
// messages it gets.
type twin struct {
	name string
	make func(t *testing.T, b *bundle, sku string) queries.Order
	// times is how many copies of its order_paid the order gets.
	times int
}

var twins = []twin{
	{"plain", func(t *testing.T, b *bundle, _ string) queries.Order { return b.newOrder(t) }, 2},
	{"with items", func(t *testing.T, b *bundle, sku string) queries.Order { return newStockOrder(t, b, sku, 10, 2) }, 2},
	{"short of stock", func(t *testing.T, b *bundle, sku string) queries.Order { return newStockOrder(t, b, sku, 1, 2) }, 2},
	{"refunded first", func(t *testing.T, b *bundle, sku string) queries.Order {
		o := newStockOrder(t, b, sku, 10, 2)
		if _, _, err := order.MarkRefunded(context.Background(), b.q, o.ID, "evt_refund"); err != nil {
			t.Fatal(err)
		}
		return o
	}, 1},
	{"already paid", func(t *testing.T, b *bundle, sku string) queries.Order {
		o := newStockOrder(t, b, sku, 10, 3)
		if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_0")); err != nil {
			t.Fatal(err)
		}
		return o
	}, 1},
}

// A batch mixing the shapes order_paid meets (a refunded order, an order
// with items, one whose stock is short, one already paid, duplicates)
// ends exactly as the per-message handler leaves twin orders: the same
// audit, the same stock left, the same answers in every execution.
func TestOrderPaidBatchMatchesThePerMessagePath(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	type pair struct{ batch, single queries.Order }
	pairs := make([]pair, len(twins))
	var batch []*message.Message
	for i, tw := range twins {
		pairs[i] = pair{tw.make(t, b, fmt.Sprintf("sku-batch-%d", i)), tw.make(t, b, fmt.Sprintf("sku-single-%d", i))}
		for range tw.times {
			batch = append(batch, orderPaid(t, pairs[i].batch, "evt_1"))
			if err := deliver(b.c.HandleOrderPaid, orderPaid(t, pairs[i].single, "evt_1")); err != nil {
				t.Fatal(err)
			}
		}
	}
	deliverBatch(t, b, batch)
	for i, tw := range twins {
		t.Run(tw.name, func(t *testing.T) {
			p := pairs[i]
			if got, want := b.audit(t, p.batch.ID), b.audit(t, p.single.ID); !reflect.DeepEqual(got, want) {
				t.Errorf("audit: batch %+v\nper-message %+v", got, want)
			}
			if tw.name != "plain" {
				if got, want := available(t, b, fmt.Sprintf("sku-batch-%d", i)), available(t, b, fmt.Sprintf("sku-single-%d", i)); got != want {
					t.Errorf("stock left: batch %d, per-message %d", got, want)
				}
			}
			if got, want := b.outcomes(t, p.batch), b.outcomes(t, p.single); !slices.Equal(got, want) {
				t.Errorf("answers: batch %q\nper-message %q", got, want)
			}
		})
	}
}

// outcomes lists, sorted, the answers each order_paid execution of o
// recorded, and whether it failed.
func (b *bundle) outcomes(t *testing.T, o queries.Order) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT outcomes::text || CASE WHEN error IS NULL THEN '' ELSE ' failed' END
		FROM executions WHERE order_id = $1 AND handler = 'order_paid'`, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// newStockOrderOf creates a pending order of one unit of each of skus
// (sorted, known SKUs).
func newStockOrderOf(t *testing.T, b *bundle, skus ...string) queries.Order {
	t.Helper()
	ctx := context.Background()
	items := make([]order.Item, len(skus))
	for i, s := range skus {
		if _, err := stock.Set(ctx, b.q, s, 1000); err != nil {
			t.Fatal(err)
		}
		items[i] = order.Item{SKU: s, Quantity: 1}
	}
	var o queries.Order
	err := postgres.InTx(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		o, err = order.Create(ctx, queries.New(tx), order.NewOrder{
			CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL", Items: items,
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Two batches over overlapping orders, and single deliveries of some of
// them, all at once: each effect once. Each order holds two of three SKUs,
// so reserving order after order takes SKUs in every order: the SKU locks
// (StockLockForOrders) keep them from deadlocking.
func TestOrderPaidBatchesOverlappingAtOnceApplyEachEffectOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	skus := []string{"sku-x", "sku-y", "sku-z"}
	orders := make([]queries.Order, 60)
	msgs := make([]*message.Message, len(orders))
	for i := range orders {
		orders[i] = newStockOrderOf(t, b, skus[i%3], skus[(i+1)%3])
		msgs[i] = orderPaid(t, orders[i], "evt_1")
	}
	first, second := slices.Clone(msgs[:40]), slices.Clone(msgs[20:])
	slices.Reverse(second)
	var wg sync.WaitGroup
	errc := make(chan error, 200)
	for _, batch := range [][]*message.Message{first, second, first} {
		wg.Go(func() {
			for _, err := range b.c.HandleOrderPaidBatch(copies(batch)) {
				errc <- err
			}
		})
	}
	wg.Go(func() {
		for _, m := range msgs[30:50] {
			errc <- deliver(b.c.HandleOrderPaid, m)
		}
	})
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range orders {
		a := b.audit(t, o.ID)
		if a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 || a.StockReserved != 1 {
			t.Fatalf("order %s: paid %d, commission %d, confirmation_enqueued %d, stock_reserved %d; want 1 each",
				o.ID, a.Paid, a.Commission, a.ConfirmationEnqueued, a.StockReserved)
		}
	}
	for _, s := range skus { // 40 orders hold each SKU, one unit each
		if got := available(t, b, s); got != 1000-40 {
			t.Errorf("%s: %d left, want %d", s, got, 1000-40)
		}
	}
}

// A failure of the batch transaction that belongs to no message the
// handler can name (here a trigger refusing one order's transition) rolls
// the whole batch back. The batch is split until the failing message is
// alone: it alone is answered with the error, to be retried, and the
// other nine are applied.
func TestOrderPaidBatchSplitsAroundAFailureItCannotAttribute(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	orders, msgs := newOrders(t, b, 10)
	bad := orders[6]
	if _, err := b.pool.Exec(context.Background(), fmt.Sprintf(`
		CREATE FUNCTION refuse_transition() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.order_id = '%s' THEN RAISE EXCEPTION 'refused by the test'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_transition BEFORE INSERT ON order_transitions
			FOR EACH ROW EXECUTE FUNCTION refuse_transition();`, bad.ID)); err != nil {
		t.Fatal(err)
	}
	errs := b.c.HandleOrderPaidBatch(copies(msgs))
	for i, err := range errs {
		switch {
		case i == 6 && (err == nil || consumer.IsPermanent(err)):
			t.Fatalf("the failing message: %v, want a transient error", err)
		case i != 6 && err != nil:
			t.Fatalf("message %d: %v", i, err)
		}
	}
	for i, o := range orders {
		a := b.audit(t, o.ID)
		if i == 6 {
			if a.Paid != 0 || a.Commission != 0 || a.ConfirmationEnqueued != 0 {
				t.Fatalf("the refused order: %+v, want nothing applied", a)
			}
			continue
		}
		if a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 || a.ExecutionsOrderPaid < 2 {
			t.Fatalf("order %d: %+v, want each effect once and the failed attempt in the log", i, a)
		}
	}
}

// With a guard switched off, the batch, wired as internal/app/worker.go
// wires it (paidBatch: its messages one at a time), shows the damage of the
// per-message path: here the state check, so every copy of the message
// transitions the order and enqueues a confirmation again.
func TestOrderPaidBatchWithAGuardOffShowsThePerMessageDamage(t *testing.T) {
	t.Parallel()
	b := setup(t, switches.Without(effect.GuardStateCheck))
	orders, msgs := newOrders(t, b, 5)
	wantOnlyInjected(t, handleBatch(b.paidBatch(), append(slices.Clone(msgs), msgs...)), -1)
	for _, o := range orders {
		if a := b.audit(t, o.ID); a.Paid != 2 || a.ConfirmationEnqueued != 2 {
			t.Fatalf("order %s: paid %d, confirmation_enqueued %d; want 2 each, as without the state check one by one", o.ID, a.Paid, a.ConfirmationEnqueued)
		}
	}
}
