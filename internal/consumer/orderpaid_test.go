package consumer_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

func TestOrderPaidDeliveredTwiceAppliesEachEffectOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.newOrder(t)
	msg := orderPaid(t, o, "evt_1")

	for i := 0; i < 2; i++ {
		if err := deliver(b.c.HandleOrderPaid, msg); err != nil {
			t.Fatalf("delivery %d: %v", i+1, err)
		}
	}
	a := b.audit(t, o.ID)
	if a.ExecutionsOrderPaid != 2 {
		t.Errorf("executions = %d, want 2", a.ExecutionsOrderPaid)
	}
	if a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 {
		t.Errorf("effects paid=%d commission=%d confirmation_enqueued=%d, want 1 each", a.Paid, a.Commission, a.ConfirmationEnqueued)
	}
}

// Two different provider events for one payment are two different messages:
// an inbox keyed by message id lets both through, the business-keyed guards
// must still apply each effect once.
func TestTwoEventsForOnePaymentApplyEachEffectOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.newOrder(t)
	for _, evt := range []string{"evt_a", "evt_b"} {
		if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, evt)); err != nil {
			t.Fatal(err)
		}
	}
	if a := b.audit(t, o.ID); a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 {
		t.Errorf("effects paid=%d commission=%d confirmation_enqueued=%d, want 1 each", a.Paid, a.Commission, a.ConfirmationEnqueued)
	}
}

// Each guard, switched off, lets its effect happen twice: this is the damage
// the guard exists to prevent, and proof that the tests above depend on it.
func TestWithoutAGuardTheEffectHappensTwice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		off   *switches.Set
		check func(t *testing.T, b *bundle, paid, commission, enqueued int64)
	}{
		{"state check off: two transitions, two confirmations", switches.Without(effect.GuardStateCheck),
			func(t *testing.T, b *bundle, paid, commission, enqueued int64) {
				if paid != 2 || enqueued != 2 {
					t.Errorf("paid=%d confirmation_enqueued=%d, want 2 and 2", paid, enqueued)
				}
			}},
		{"ledger key from the delivery: two commissions", switches.Without(effect.GuardLedgerKey),
			func(t *testing.T, b *bundle, paid, commission, enqueued int64) {
				if commission != 2 {
					t.Errorf("commission=%d, want 2", commission)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.off)
			o := b.newOrder(t)
			for _, evt := range []string{"evt_a", "evt_b"} {
				if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, evt)); err != nil {
					t.Fatal(err)
				}
			}
			a := b.audit(t, o.ID)
			tt.check(t, b, a.Paid, a.Commission, a.ConfirmationEnqueued)
		})
	}
}

func TestOrderPaidConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		distinct bool
	}{
		{"50 copies of one message", false},
		{"50 different messages for one order", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			o := b.newOrder(t)
			msgs := make([]*message.Message, 50)
			for i := range msgs {
				evt := "evt_same"
				if tt.distinct {
					evt = "evt_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
				}
				msgs[i] = orderPaid(t, o, evt)
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, len(msgs))
			for _, m := range msgs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs <- deliver(b.c.HandleOrderPaid, m)
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("delivery failed: %v", err)
				}
			}
			a := b.audit(t, o.ID)
			if a.ExecutionsOrderPaid != 50 {
				t.Errorf("executions = %d, want 50", a.ExecutionsOrderPaid)
			}
			if a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 {
				t.Errorf("effects paid=%d commission=%d confirmation_enqueued=%d, want 1 each", a.Paid, a.Commission, a.ConfirmationEnqueued)
			}
		})
	}
}

// A failure between step 1 and step 2 is a real partial failure: the order
// is paid, the commission is not. The redelivery must complete step 2 and
// must not redo step 1.
func TestPartialFailureIsCompletedByTheRedelivery(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.newOrder(t)
	msg := orderPaid(t, o, "evt_1")
	b.faults.Arm(consumer.FaultAfterMarkPaid, fault.Fail, 1)

	if err := deliver(b.c.HandleOrderPaid, msg); !errors.Is(err, fault.ErrInjected) {
		t.Fatalf("first delivery: err = %v, want the injected fault", err)
	}
	if a := b.audit(t, o.ID); a.Paid != 1 || a.Commission != 0 {
		t.Fatalf("after the fault: paid=%d commission=%d, want 1 and 0 (a partial failure)", a.Paid, a.Commission)
	}
	if err := deliver(b.c.HandleOrderPaid, msg); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	if a := b.audit(t, o.ID); a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 {
		t.Errorf("after redelivery: paid=%d commission=%d confirmation_enqueued=%d, want 1 each", a.Paid, a.Commission, a.ConfirmationEnqueued)
	}
}

// The work committed but the ack never happened (a timeout, a crash): the
// broker sends the message again and every effect stays at one.
func TestCommitWithoutAckIsRedeliveredHarmlessly(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.newOrder(t)
	msg := orderPaid(t, o, "evt_1")
	b.faults.Arm(consumer.FaultBeforeAck, fault.Fail, 1)

	if err := deliver(b.c.HandleOrderPaid, msg); !errors.Is(err, fault.ErrInjected) {
		t.Fatalf("first delivery: err = %v, want the injected fault", err)
	}
	if err := deliver(b.c.HandleOrderPaid, msg); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	if a := b.audit(t, o.ID); a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 || a.ExecutionsOrderPaid != 2 {
		t.Errorf("executions=%d paid=%d commission=%d confirmation_enqueued=%d, want 2, 1, 1, 1",
			a.ExecutionsOrderPaid, a.Paid, a.Commission, a.ConfirmationEnqueued)
	}
}

func TestOrderPaidThatCanNeverSucceedIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	unknown := b.newOrder(t)
	unknown.ID[0] ^= 0xff // an order that does not exist
	for name, msg := range map[string]*message.Message{
		"malformed payload": message.NewMessage("m1", []byte(`{"order_id": 42}`)),
		"unknown order":     orderPaid(t, unknown, "evt_1"),
	} {
		err := deliver(b.c.HandleOrderPaid, msg)
		if err == nil || !consumer.IsPermanent(err) {
			t.Errorf("%s: err = %v, want a permanent error", name, err)
		}
	}
}
