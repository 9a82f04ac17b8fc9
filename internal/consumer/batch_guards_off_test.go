package consumer_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// The batch handlers with a guard switched off, wired as
// internal/app/worker.go wires them (switches.Consumers, and
// switches.Batches around the batch handler: paidBatch, confirmedBatch).
// No mistake has a set form: with a consumer guard off, a batch hands its
// messages one at a time to the per-message handler, and so must do
// exactly the damage the per-message path does without that guard, and
// nothing else. Each test runs one sequence of batches over orders A, B
// and C, and the same deliveries one by one (HandleOrderPaid,
// HandleOrderConfirmed) over twin orders, and checks
//
//   - the damage itself: the effect at 2 where the guard is off, at 1
//     with it on;
//   - that the batch did what the per-message path did: the same audit and
//     the same answers in every execution, order by order;
//   - which path the batch took: with the guard on, the set-based one, the
//     rows of its effect, for all three orders, written by one transaction
//     (one xmin), which the per-message path, a transaction per message,
//     never does; with the guard off, one message at a time, a
//     transaction per row.

// The order_paid sequence: A twice in the first batch (two provider
// events), B and C once; then a later batch with a new event for B and a
// redelivery of C's message.
var paidBatches = [][]delivery{
	{{0, "evt_1"}, {0, "evt_2"}, {1, "evt_1"}, {2, "evt_1"}},
	{{1, "evt_2"}, {2, "evt_1"}},
}

// The order_paid guards, each switched off in turn.
func TestOrderPaidBatchWithAGuardOffDoesThePerMessageDamage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		guard string
		table string // where the effect is written, one row per time
		// perOrderOn: with the guard on, the batch writes table order by
		// order, in savepoints of its transaction (stock.Reserve), each
		// its own xmin; order_transitions shows the set-based path then.
		perOrderOn bool
		// effect counts the guarded effect of an order.
		effect func(a queries.AuditOrderRow) int64
		// off is the effect of A, B and C with the guard off (on: 1 each).
		off [3]int64
	}{
		// Every delivery moves the order again, C's redelivered message too.
		{effect.GuardStateCheck, "order_transitions", false, func(a queries.AuditOrderRow) int64 { return a.Paid }, [3]int64{2, 2, 2}},
		// Keyed by the delivery: two events credit twice, one message
		// redelivered (C) still once.
		{effect.GuardLedgerKey, "ledger_entries", false, func(a queries.AuditOrderRow) int64 { return a.Commission }, [3]int64{2, 2, 1}},
		// The naive counter takes the items at every delivery.
		{effect.GuardStockReservation, "stock_movements", true, func(a queries.AuditOrderRow) int64 { return a.StockReserved }, [3]int64{2, 2, 2}},
	} {
		for _, off := range []bool{true, false} {
			name := fmt.Sprintf("%s off", tc.guard)
			set := switches.Without(tc.guard)
			want := tc.off
			if !off {
				name, set, want = fmt.Sprintf("%s on", tc.guard), nil, [3]int64{1, 1, 1}
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, set)
				orders, twins := stockOrders(t, b, "sku-batch"), stockOrders(t, b, "sku-single")
				// Only the first batch's rows: the set-based path writes
				// them in one transaction, one message at a time writes
				// one row per message (every message of it applies the
				// effect without the guard) in a transaction of its own.
				table := tc.table
				if !off && tc.perOrderOn {
					table = "order_transitions"
				}
				runPaidFirst(t, b, orders)
				n := transactions(t, b, table, orders)
				switch {
				case off && n != len(paidBatches[0]):
					t.Errorf("the first batch's %s rows come from %d transactions, want %d: the batch did not hand its messages over one by one", table, n, len(paidBatches[0]))
				case !off && n != 1:
					t.Errorf("the first batch's %s rows come from %d transactions, want 1: the batch did not take the set-based path", table, n)
				}
				runPaidRest(t, b, orders)
				runPaidOneByOne(t, b, twins)
				if n := transactions(t, b, table, twins); n < 3 {
					t.Fatalf("one by one, %s rows come from %d transactions: the check cannot tell the paths apart", table, n)
				}
				for i, o := range orders {
					if got := tc.effect(b.audit(t, o.ID)); got != want[i] {
						t.Errorf("order %c: %s effect %d, want %d", 'A'+i, tc.table, got, want[i])
					}
					if got, single := available(t, b, fmt.Sprintf("sku-batch-%d", i)), available(t, b, fmt.Sprintf("sku-single-%d", i)); got != single {
						t.Errorf("order %c: %d left in stock, %d one by one", 'A'+i, got, single)
					}
				}
				sameAsPerMessage(t, b, consumer.HandlerOrderPaid, orders, twins)
			})
		}
	}
}

// The outbox: with it off, no outbox row, and the batch hands its messages
// one at a time to HandleOrderPaid, held (switches.Batches): each
// confirmation is published straight to the broker after its message's
// commits, in a call of its own, as one by one. A failure between the
// commit and that call (the fault point after step 1, here for A's first
// message) loses A's confirmation for good, as one by one: its redelivery
// finds the order paid and has nothing to publish. With the outbox, the
// confirmation committed with the transition, and the batch took the
// set-based path.
func TestOrderPaidBatchWithoutTheOutboxPublishesAfterTheCommit(t *testing.T) {
	t.Parallel()
	batches := [][]delivery{
		{{0, "evt_1"}, {0, "evt_2"}, {1, "evt_1"}, {2, "evt_1"}},
		{{0, "evt_1"}, {1, "evt_2"}}, // A's failed message again, and a new event for B
	}
	for _, off := range []bool{true, false} {
		name, set := "outbox off", switches.Without(effect.GuardOutbox)
		wantEnqueued, wantPublished := [3]int64{0, 0, 0}, [3]int{0, 1, 1}
		// One publish call per confirmation published (B's and C's),
		// one by one and in the batches alike.
		wantCalls, wantTransitions := 2, 3
		if !off {
			name, set = "outbox on", nil
			wantEnqueued, wantPublished = [3]int64{1, 1, 1}, [3]int{0, 0, 0}
			wantCalls, wantTransitions = 0, 1
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pub := &recordingPublisher{}
			b := withDirect(setup(t, set), pub)
			orders, twins := []queries.Order{b.newOrder(t), b.newOrder(t), b.newOrder(t)}, []queries.Order{b.newOrder(t), b.newOrder(t), b.newOrder(t)}

			b.faults.Arm(consumer.FaultAfterMarkPaid, fault.Fail, 1)
			wantOnlyInjected(t, handleBatch(b.paidBatch(), paidMessages(t, orders, batches[0])), 0)
			// Off: A's first message, B's and C's moved their orders, each
			// in its own transaction (A's second found A paid).
			if n := transactions(t, b, "order_transitions", orders); n != wantTransitions {
				t.Errorf("the first batch's transitions come from %d transactions, want %d (1: the set-based path; 3: one message at a time)", n, wantTransitions)
			}
			wantOnlyInjected(t, handleBatch(b.paidBatch(), paidMessages(t, orders, batches[1])), -1)
			calls := pub.callCount()
			if calls != wantCalls {
				t.Errorf("%d publish calls for the batches, want %d", calls, wantCalls)
			}

			b.faults.Arm(consumer.FaultAfterMarkPaid, fault.Fail, 1)
			for k, batch := range batches {
				for j, m := range paidMessages(t, twins, batch) {
					err := deliver(b.routed(b.c.HandleOrderPaid), m)
					if k == 0 && j == 0 {
						if !errors.Is(err, fault.ErrInjected) {
							t.Fatalf("one by one, A's first message: %v, want the injected fault", err)
						}
					} else if err != nil {
						t.Fatal(err)
					}
				}
			}
			if single := pub.callCount() - calls; single != calls {
				t.Errorf("%d publish calls one by one, %d for the batches", single, calls)
			}
			for i := range orders {
				if got := b.audit(t, orders[i].ID).ConfirmationEnqueued; got != wantEnqueued[i] {
					t.Errorf("order %c: %d confirmations in the outbox, want %d", 'A'+i, got, wantEnqueued[i])
				}
				if got, single := pub.published(t, orders[i]), pub.published(t, twins[i]); got != wantPublished[i] || single != wantPublished[i] {
					t.Errorf("order %c: %d confirmations published straight to the broker (%d one by one), want %d", 'A'+i, got, single, wantPublished[i])
				}
			}
			sameAsPerMessage(t, b, consumer.HandlerOrderPaid, orders, twins)
		})
	}
}

// The order_confirmed guards, each switched off in turn with the e-mail's
// claim (which alone would answer every copy below without a call); with
// one off the batch hands its messages to HandleOrderConfirmed one at a
// time (a transaction per provider answer logged). Without the inbox, every
// copy of a message calls the provider, A's two copies in one batch and B's
// and C's redeliveries in the next; the provider's key still sends one
// e-mail each. Without the provider's key, a call whose inbox row was never
// written (the fault point after the call, for A) is made again by the
// redelivery with a fresh key: a second e-mail.
func TestOrderConfirmedBatchWithAGuardOffDoesThePerMessageDamage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		guards  []string
		batches [][]int
		fault   bool // the fault point after the first call of the first batch
		// count is the effect of an order; off its values for A, B and C
		// with the guard off (on: 1 each).
		count func(t *testing.T, b *bundle, o queries.Order) int
		off   [3]int
	}{
		{[]string{effect.GuardInbox, effect.GuardNotificationClaim}, [][]int{{0, 0, 1, 2}, {1, 2}}, false, providerCalls, [3]int{2, 2, 2}},
		{[]string{effect.GuardProviderKey, effect.GuardNotificationClaim}, [][]int{{0, 1, 2}, {0, 1}}, true, func(_ *testing.T, b *bundle, o queries.Order) int { return sentTo(b, o) }, [3]int{2, 1, 1}},
	} {
		for _, off := range []bool{true, false} {
			name, set, want := fmt.Sprintf("%s off", strings.Join(tc.guards, "+")), switches.Without(tc.guards...), tc.off
			if !off {
				name, set, want = fmt.Sprintf("%s on", strings.Join(tc.guards, "+")), nil, [3]int{1, 1, 1}
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, set)
				orders, twins := []queries.Order{b.newOrder(t), b.newOrder(t), b.newOrder(t)}, []queries.Order{b.newOrder(t), b.newOrder(t), b.newOrder(t)}
				failing := -1
				if tc.fault {
					failing = 0
				}
				for k, batch := range tc.batches {
					if k == 0 && tc.fault {
						b.faults.Arm(consumer.FaultAfterProviderCall, fault.Fail, 1)
					}
					want := -1
					if k == 0 {
						want = failing
					}
					wantOnlyInjected(t, handleBatch(b.confirmedBatch(), confirmedMessages(t, orders, batch)), want)
					if k == 0 {
						// Off, every message of the first batch calls the
						// provider and logs its answer.
						n := transactions(t, b, "notification_log", orders)
						switch {
						case off && n != len(batch):
							t.Errorf("the first batch's provider answers were logged by %d transactions, want %d: the batch did not hand them over one by one", n, len(batch))
						case !off && n != 1:
							t.Errorf("the first batch's provider answers were logged by %d transactions, want 1: the batch did not take the set-based path", n)
						}
					}
				}
				for k, batch := range tc.batches {
					if k == 0 && tc.fault {
						b.faults.Arm(consumer.FaultAfterProviderCall, fault.Fail, 1)
					}
					for j, m := range confirmedMessages(t, twins, batch) {
						err := deliver(b.routed(b.c.HandleOrderConfirmed), m)
						if k == 0 && j == failing {
							if !errors.Is(err, fault.ErrInjected) {
								t.Fatalf("one by one, message %d: %v, want the injected fault", j, err)
							}
						} else if err != nil {
							t.Fatal(err)
						}
					}
				}
				if n := transactions(t, b, "notification_log", twins); n < 3 {
					t.Fatalf("one by one, the answers were logged by %d transactions: the check cannot tell the paths apart", n)
				}
				for i, o := range orders {
					if got, single := tc.count(t, b, o), tc.count(t, b, twins[i]); got != want[i] || single != want[i] {
						t.Errorf("order %c: effect %d (%d one by one), want %d", 'A'+i, got, single, want[i])
					}
				}
				sameAsPerMessage(t, b, consumer.HandlerOrderConfirmed, orders, twins)
			})
		}
	}
}
