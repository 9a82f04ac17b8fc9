package payment_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// loseTheAnswer pays o under key while the gateway answers after the
// client gave up: the gateway charges, the service hears nothing
// (ErrGatewayUnavailable) and gives the charge back with its outcome
// unknown. Then the gateway forgets its keys, as it does after about a day,
// while the provider's webhook has not come (the api was unreachable, or
// its secret rotated).
func loseTheAnswer(t *testing.T, b *bundle, o queries.Order, key string) {
	t.Helper()
	b.control(t, fakes.GatewayControl{DelayMS: 500})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := b.svc.Pay(ctx, payment.Request{OrderID: o.ID, Key: key}); !errors.Is(err, payment.ErrGatewayUnavailable) {
		t.Fatalf("pay with the answer lost: %v, want ErrGatewayUnavailable", err)
	}
	if n := len(b.charges(o)); n != 1 {
		t.Fatalf("the gateway made %d charges before the answer was lost, want 1", n)
	}
	b.control(t, fakes.GatewayControl{})
	b.gw.ForgetKeys()
}

// TestLostChargeIsAskedForNotSentAgain: a charge whose answer was lost is
// never sent again blind. The next request, under a new key, takes the
// order's charge over; before sending it asks the gateway for the order's
// charges, finds the first, and answers with it: one charge. Without the
// look-up (--without ask-first) only the gateway's memory of the key stood
// in the way, and it has forgotten it: a second real charge.
func TestLostChargeIsAskedForNotSentAgain(t *testing.T) {
	t.Parallel()
	t.Run("guarded", func(t *testing.T) {
		t.Parallel()
		b := setup(t, payment.Config{})
		o := b.newOrder(t, "cust-lost-answer")
		loseTheAnswer(t, b, o, "k1")
		first := b.charges(o)[0]

		resp, err := pay(b.svc, o, "k2", "")
		if err != nil {
			t.Fatalf("pay under a new key: %v", err)
		}
		if got := decodeCharged(t, resp.Body); resp.Status != http.StatusCreated || got.Charge.ID != first.ID {
			t.Fatalf("pay under a new key = %d %s, want 201 naming the first charge %s", resp.Status, resp.Body, first.ID)
		}
		if n := b.gatewayCalls(o); n != 1 {
			t.Fatalf("POST /charges calls = %d, want 1: the look-up found the charge, nothing was sent again", n)
		}
		if n := len(b.charges(o)); n != 1 {
			t.Fatalf("gateway charges = %d, want 1", n)
		}
		if a := b.audit(t, o); a.Charges != 1 {
			t.Fatalf("audit charges = %d, want 1", a.Charges)
		}
		if ch := b.chargeRow(t, o); ch.State != "charged" || ch.ChargeID.String != first.ID {
			t.Fatalf("the order's charge = %s %q, want charged by %s", ch.State, ch.ChargeID.String, first.ID)
		}
	})
	t.Run("without ask-first", func(t *testing.T) {
		t.Parallel()
		b := setupWithout(t, payment.Config{}, switches.Without(effect.GuardAskFirst))
		o := b.newOrder(t, "cust-lost-answer-blind")
		loseTheAnswer(t, b, o, "k1")
		resp, err := pay(b.svc, o, "k2", "")
		if err != nil || resp.Status != http.StatusCreated {
			t.Fatalf("pay under a new key = %d %s, %v; want 201", resp.Status, resp.Body, err)
		}
		if n := len(b.charges(o)); n != 2 {
			t.Fatalf("gateway charges = %d with the look-up off, want 2: the test does not exercise it", n)
		}
	})
}

// TestLostChargeWhenTheGatewayCannotSay: the gateway cannot be asked (its
// search answers 503), so the payment is refused with ErrOutcomeUnknown and
// nothing is sent; the key and the charge are given back, and once the
// gateway can say, the same key gets the first charge. A charge never made
// (the crash came before the call) is sent once the gateway says so.
func TestLostChargeWhenTheGatewayCannotSay(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	o := b.newOrder(t, "cust-cannot-say")
	loseTheAnswer(t, b, o, "k1")
	first := b.charges(o)[0]

	b.control(t, fakes.GatewayControl{LookupFailNext: 1})
	if _, err := pay(b.svc, o, "k2", ""); !errors.Is(err, payment.ErrOutcomeUnknown) {
		t.Fatalf("pay while the gateway cannot say: %v, want ErrOutcomeUnknown", err)
	}
	if n := b.gatewayCalls(o); n != 1 {
		t.Fatalf("POST /charges calls = %d, want 1: nothing is sent while the outcome is unknown", n)
	}
	if row := b.keyRow(t, o.CustomerID, "k2"); row.CompletedAt != nil || row.Held {
		t.Fatalf("key k2 after the refusal: completed %v held %v, want given back", row.CompletedAt, row.Held)
	}
	resp, err := pay(b.svc, o, "k2", "")
	if err != nil || decodeCharged(t, resp.Body).Charge.ID != first.ID {
		t.Fatalf("k2 again = %d %s, %v; want the first charge %s", resp.Status, resp.Body, err, first.ID)
	}
	if n := len(b.charges(o)); n != 1 {
		t.Fatalf("gateway charges = %d, want 1", n)
	}
}

// TestChargeNeverMadeIsSentAfterAsking: the api died before its call (the
// fault point before the gateway), so the gateway made nothing; the next
// request asks, hears "no charge", and charges once.
func TestChargeNeverMadeIsSentAfterAsking(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{LockTimeout: 200 * time.Millisecond})
	o := b.newOrder(t, "cust-never-made")
	crash(t, b, b.cfg, o, "k1")
	time.Sleep(300 * time.Millisecond) // the dead holder's lock expires
	resp := mustCharge(t, b.svc, o, "k2")
	if n := len(b.charges(o)); n != 1 || decodeCharged(t, resp.Body).Charge.ID != b.charges(o)[0].ID {
		t.Fatalf("gateway charges = %d, want the one k2 made", n)
	}
}
