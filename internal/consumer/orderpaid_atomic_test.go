package consumer_test

import (
	"context"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
)

// The confirmation exists exactly when the transition does, because both are
// written in one transaction; tested directly, with a real PostgreSQL error
// at each of the two writes.
//
//   - The outbox write of the confirmation fails: the transition must not be
//     left behind. Were the confirmation written after the transition
//     committed, the order would stay paid with no confirmation, and the
//     redelivery, finding it paid, would never write one.
//   - The transaction fails at COMMIT, after both writes: the confirmation
//     must not be left behind either (a confirmation of an order that is not
//     paid).
//
// In both cases the redelivery then applies each effect once.
func TestConfirmationIsWrittenWithTheTransitionOrNotAtAll(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		table string
		when  pgtest.When
	}{
		{"the confirmation's outbox write fails", "watermill_outbox", pgtest.AtInsert},
		{"the transaction fails at commit", "order_transitions", pgtest.AtCommit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			o := b.newOrder(t)
			msg := orderPaid(t, o, "evt_1")
			refusal := pgtest.RefuseInserts(t, b.pool, tt.table, tt.when)

			if err := deliver(b.c.HandleOrderPaid, msg); err == nil {
				t.Fatal("the delivery succeeded although its transaction could not be written")
			}
			if refusal.Count(t) == 0 {
				t.Fatalf("nothing was refused on %s: the test did not exercise the failure", tt.table)
			}
			a := b.audit(t, o.ID)
			got, err := order.Get(context.Background(), b.q, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			if a.Paid != 0 || got.Status != order.StatusPending || a.ConfirmationEnqueued != 0 {
				t.Fatalf("after the failed delivery: status %s, paid=%d, confirmation_enqueued=%d; want pending, 0, 0 (both or neither)",
					got.Status, a.Paid, a.ConfirmationEnqueued)
			}

			refusal.Lift(t)
			if err := deliver(b.c.HandleOrderPaid, msg); err != nil {
				t.Fatalf("redelivery: %v", err)
			}
			if a := b.audit(t, o.ID); a.Paid != 1 || a.ConfirmationEnqueued != 1 || a.Commission != 1 {
				t.Errorf("after the redelivery: paid=%d confirmation_enqueued=%d commission=%d, want 1 each", a.Paid, a.ConfirmationEnqueued, a.Commission)
			}
		})
	}
}

// Two deliveries of order_paid for one order race, deterministically: the
// first has moved the order to paid and is held, uncommitted, at its outbox
// write (the test locks the outbox table); the second starts only then and
// must queue behind the first's row lock. When the first commits, the
// second's UPDATE ... WHERE status = 'pending' re-reads the row, matches
// nothing and answers already_applied. A state check read with a SELECT
// before an unconditional UPDATE lets the second see 'pending' and transition
// the order again, with a second confirmation.
func TestConcurrentOrderPaidWaitsForTheFirstTransition(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, first, second string }{
		{"a redelivery of one message", "evt_1", "evt_1"},
		{"two events for one payment", "evt_1", "evt_2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			o := b.newOrder(t)
			firstMsg, secondMsg := orderPaid(t, o, tt.first), orderPaid(t, o, tt.second)
			var first, second error
			pgtest.Overlap(t, b.pool, "watermill_outbox",
				func() { first = deliver(b.c.HandleOrderPaid, firstMsg) },
				func() { second = deliver(b.c.HandleOrderPaid, secondMsg) })
			if first != nil || second != nil {
				t.Fatalf("deliveries: first err = %v, second err = %v", first, second)
			}
			if a := b.audit(t, o.ID); a.Paid != 1 || a.ConfirmationEnqueued != 1 || a.Commission != 1 || a.ExecutionsOrderPaid != 2 {
				t.Errorf("executions=%d paid=%d confirmation_enqueued=%d commission=%d, want 2, 1, 1, 1",
					a.ExecutionsOrderPaid, a.Paid, a.ConfirmationEnqueued, a.Commission)
			}
		})
	}
}
