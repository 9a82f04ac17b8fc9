package payment_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestPayAfterCrash(t *testing.T) {
	t.Parallel()
	cfg := payment.Config{LockTimeout: 2 * time.Second} // long enough to outlast a loaded machine between the crash and the retry
	b := setup(t, cfg)

	t.Run("a crash before the gateway call holds the key until its lock expires, then a retry charges once", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-crash")
		crash(t, b, cfg, o, "k1")
		if _, err := pay(b.svc, o, "k1", ""); !errors.As(err, new(*payment.InFlightError)) {
			t.Fatalf("retry before the lock expired: err = %v, want *InFlightError", err)
		}
		waitLockExpired(t, b, o, "k1")
		mustCharge(t, b.svc, o, "k1")
		if n := len(b.charges(o)); n != 1 {
			t.Fatalf("gateway charges = %d, want 1", n)
		}
	})

	t.Run("a retry while the crashed request's lock holds is told the time left on it", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-retry-after")
		// The crashed request ran with a longer lock than the retry's own.
		crash(t, b, payment.Config{LockTimeout: 3 * time.Second}, o, "k1")
		_, err := pay(b.svc, o, "k1", "")
		var inFlight *payment.InFlightError
		if !errors.As(err, &inFlight) || inFlight.RetryAfter != 3*time.Second {
			t.Fatalf("err = %v, want *InFlightError with RetryAfter 3s (the time left on the holder's lock)", err)
		}
	})

	t.Run("a crash after the gateway charged: the retry gets that charge, not a second one", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-crash-charged")
		crash(t, b, cfg, o, "k1")
		// The crashed request had reached the gateway: it charged under the
		// key of the order's first charge attempt, and its answer was lost.
		answer, err := b.client.Charge(context.Background(), payment.ChargeKey(o.ID, 1), payment.ChargeRequest{
			OrderID: o.ID.String(), AmountCents: o.AmountCents, Currency: o.Currency,
		})
		if err != nil || answer.Status != http.StatusCreated {
			t.Fatalf("direct charge: %d %v", answer.Status, err)
		}
		waitLockExpired(t, b, o, "k1")
		resp := mustCharge(t, b.svc, o, "k1")
		charges := b.charges(o)
		if len(charges) != 1 {
			t.Fatalf("gateway charges = %d, want 1", len(charges))
		}
		if got := decodeCharged(t, resp.Body).Charge.ID; got != charges[0].ID {
			t.Fatalf("response names charge %s, want the first charge %s", got, charges[0].ID)
		}
	})
}

func TestPayRecoveryRace(t *testing.T) {
	t.Parallel()
	cfg := payment.Config{LockTimeout: time.Second}
	b := setup(t, cfg)
	b.control(t, fakes.GatewayControl{DelayMS: 200})
	o := b.newOrder(t, "cust-recover")
	crash(t, b, cfg, o, "k1")
	waitLockExpired(t, b, o, "k1")

	results := payConcurrently(b.svc, o, "k1", 8)
	fresh, replayed, inFlight := tally(t, results)
	if fresh != 1 || fresh+replayed+inFlight != 8 {
		t.Fatalf("fresh=%d replayed=%d in-flight=%d, want exactly one recoverer", fresh, replayed, inFlight)
	}
	if n := b.gatewayCalls(o); n != 1 {
		t.Fatalf("gateway calls = %d, want 1 (only the recoverer may call)", n)
	}
	if n := len(b.charges(o)); n != 1 {
		t.Fatalf("gateway charges = %d, want 1", n)
	}
}

// crash runs Pay with FaultBeforeGatewayCall armed once: phase 1 commits,
// then the request "dies" before calling the gateway.
func crash(t *testing.T, b *bundle, cfg payment.Config, o queries.Order, key string) {
	t.Helper()
	faults := fault.New(nil)
	faults.Arm(payment.FaultBeforeGatewayCall, fault.Fail, 1)
	if _, err := pay(b.service(cfg, nil).WithFaults(faults), o, key, ""); !errors.Is(err, fault.ErrInjected) {
		t.Fatalf("err = %v, want the injected fault", err)
	}
	if n := b.gatewayCalls(o); n != 0 {
		t.Fatalf("gateway calls = %d, want 0", n)
	}
}

// waitLockExpired sleeps until the key's lock has expired on the database's
// clock, the one the lock is compared with.
func waitLockExpired(t *testing.T, b *bundle, o queries.Order, key string) {
	t.Helper()
	row := b.keyRow(t, o.CustomerID, key)
	if row.LockedUntil == nil || row.CompletedAt != nil {
		t.Fatalf("key %s is not locked: %+v", key, row)
	}
	time.Sleep(time.Duration(row.LockLeftMs) * time.Millisecond)
	waitFor(t, func() bool { return !b.keyRow(t, o.CustomerID, key).Held })
}
