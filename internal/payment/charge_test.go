package payment_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// The per-order charge claim (charge.go): one charge per order, whatever the
// Idempotency-Key. Every test here runs with the guard on, and once with it
// off (effect.GuardChargeClaim) to show it is the guard that holds: with it
// off each of them sees a second charge.

// guardOnAndOff runs test with the per-order guard on, where it must pass, and
// off, where it must see the damage: test returns the number of charges the
// gateway made for its order.
func guardOnAndOff(t *testing.T, cfg payment.Config, test func(t *testing.T, b *bundle) (o queries.Order, charges int)) {
	t.Helper()
	t.Run("guarded", func(t *testing.T) {
		t.Parallel()
		b := setup(t, cfg)
		o, n := test(t, b)
		if n != 1 {
			t.Fatalf("gateway charges = %d, want 1", n)
		}
		if a := b.audit(t, o); a.Charges != 1 {
			t.Fatalf("audit charges = %d, want 1", a.Charges)
		}
	})
	t.Run("without the charge claim", func(t *testing.T) {
		t.Parallel()
		b := setupWithout(t, cfg, switches.Without(effect.GuardChargeClaim))
		if _, n := test(t, b); n < 2 {
			t.Fatalf("gateway charges = %d with the per-order guard off, want 2 or more: the test does not exercise it", n)
		}
	})
}

func TestOneChargePerOrder(t *testing.T) {
	t.Parallel()

	t.Run("50 concurrent requests with 50 keys while the gateway is slow", func(t *testing.T) {
		t.Parallel()
		guardOnAndOff(t, payment.Config{LockTimeout: 5 * time.Second}, func(t *testing.T, b *bundle) (queries.Order, int) {
			b.control(t, fakes.GatewayControl{DelayMS: 200})
			o := b.newOrder(t, "cust-50-keys")
			results := make([]result, 50)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range results {
				wg.Go(func() {
					<-start
					resp, err := pay(b.svc, o, fmt.Sprintf("k%d", i), "")
					results[i] = result{resp, err}
				})
			}
			close(start)
			wg.Wait()
			if !b.svcGuarded() {
				return o, len(b.charges(o))
			}
			var charged, refused int
			for _, r := range results {
				switch {
				case errors.As(r.err, new(*payment.InFlightError)):
					refused++
				case r.err != nil:
					t.Fatalf("unexpected error: %v", r.err)
				case r.resp.Status == http.StatusCreated:
					charged++
				case r.resp.Status == http.StatusConflict:
					refused++
				default:
					t.Fatalf("unexpected answer %d %s", r.resp.Status, r.resp.Body)
				}
			}
			if charged != 1 || refused != 49 {
				t.Fatalf("201 = %d, 409 = %d; want one charge and 49 explicit refusals", charged, refused)
			}
			return o, len(b.charges(o))
		})
	})

	t.Run("the first call times out although the gateway charged, then a new key", func(t *testing.T) {
		t.Parallel()
		guardOnAndOff(t, payment.Config{}, func(t *testing.T, b *bundle) (queries.Order, int) {
			o := b.newOrder(t, "cust-new-key-after-timeout")
			// Our gateway client gives up after 100ms; the gateway charges,
			// then takes 400ms to answer.
			b.control(t, fakes.GatewayControl{DelayMS: 400})
			impatient := switches.Payments(payment.NewService(b.pool, payment.NewGatewayClient(b.url, &http.Client{Timeout: 100 * time.Millisecond}), b.cfg), b.off)
			if _, err := pay(impatient, o, "k1", ""); !errors.Is(err, payment.ErrGatewayUnavailable) {
				t.Fatalf("first call: err = %v, want ErrGatewayUnavailable (timed out)", err)
			}
			waitFor(t, func() bool { return len(b.charges(o)) == 1 })
			b.control(t, fakes.GatewayControl{})
			// The client cannot know the charge happened and mints a new key.
			resp := mustCharge(t, b.svc, o, "k2")
			if b.svcGuarded() {
				if got, first := decodeCharged(t, resp.Body).Charge.ID, b.charges(o)[0].ID; got != first {
					t.Fatalf("k2 names charge %s, want the first charge %s brought back", got, first)
				}
			}
			return o, len(b.charges(o))
		})
	})

	t.Run("a released key retried after another key paid the order", func(t *testing.T) {
		t.Parallel()
		guardOnAndOff(t, payment.Config{}, func(t *testing.T, b *bundle) (queries.Order, int) {
			o := b.newOrder(t, "cust-released-key")
			b.control(t, fakes.GatewayControl{FailNext: 1})
			if _, err := pay(b.svc, o, "k1", ""); !errors.Is(err, payment.ErrGatewayUnavailable) {
				t.Fatalf("k1: err = %v, want ErrGatewayUnavailable (the 503)", err)
			}
			mustCharge(t, b.svc, o, "k2")
			// The 502 told the client to retry k1; it does.
			resp, err := pay(b.svc, o, "k1", "")
			if err != nil {
				t.Fatalf("k1 retried: %v", err)
			}
			if b.svcGuarded() {
				mustBeAlreadyPaid(t, resp)
				again, err := pay(b.svc, o, "k1", "")
				if err != nil || !again.Replayed || again.Status != http.StatusConflict {
					t.Fatalf("k1 again = %d replayed=%v, %v; want the stored 409", again.Status, again.Replayed, err)
				}
			}
			return o, len(b.charges(o))
		})
	})

	t.Run("a crash between the claim and the gateway call, then another key", func(t *testing.T) {
		t.Parallel()
		cfg := payment.Config{LockTimeout: 2 * time.Second} // long enough to outlast a loaded machine between the crash and k2
		guardOnAndOff(t, cfg, func(t *testing.T, b *bundle) (queries.Order, int) {
			o := b.newOrder(t, "cust-crash-new-key")
			crash(t, b, cfg, o, "k1")
			if b.svcGuarded() {
				// k1's request holds the order's charge until its lock expires.
				if _, err := pay(b.svc, o, "k2", ""); !errors.As(err, new(*payment.InFlightError)) {
					t.Fatalf("k2 before the lock expired: err = %v, want *InFlightError", err)
				}
				waitLockExpired(t, b, o, "k1")
			}
			mustCharge(t, b.svc, o, "k2")
			waitLockExpired(t, b, o, "k1")
			resp, err := pay(b.svc, o, "k1", "")
			if err != nil {
				t.Fatalf("k1 recovered: %v", err)
			}
			if b.svcGuarded() {
				mustBeAlreadyPaid(t, resp)
			}
			return o, len(b.charges(o))
		})
	})
}

func TestChargeAfterRefusal(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	o := b.newOrder(t, "cust-declined")
	// The gateway refuses attempt 1 for good: its key already holds a charge
	// for another amount (422), as a declined card would (402).
	if _, err := b.client.Charge(context.Background(), payment.ChargeKey(o.ID, 1), payment.ChargeRequest{
		OrderID: o.ID.String(), AmountCents: o.AmountCents + 1, Currency: o.Currency,
	}); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, b.svc, o, "k1", http.StatusPaymentRequired)
	// Nothing was charged for this order's amount, so a new key may try
	// again: the next attempt, under the next gateway key.
	resp := mustCharge(t, b.svc, o, "k2")
	if got := decodeCharged(t, resp.Body).Charge.IdempotencyKey; got != payment.ChargeKey(o.ID, 2) {
		t.Fatalf("k2 charged under %q, want %q", got, payment.ChargeKey(o.ID, 2))
	}
	if a := b.audit(t, o); a.Charges != 1 {
		t.Fatalf("audit charges = %d, want 1 (the refusal is no charge)", a.Charges)
	}
	resp, err := pay(b.svc, o, "k3", "")
	if err != nil {
		t.Fatal(err)
	}
	mustBeAlreadyPaid(t, resp)
}

// TestChargeClaimRace pins the race the concurrent test can only provoke:
// the first request's phase 1 has claimed the order's charge but not yet
// committed when a request with another key claims it too. The second must
// wait for the first, then be told the charge is in flight: a check-then-
// insert claim would not see the uncommitted row and charge again.
func TestChargeClaimRace(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	o := b.newOrder(t, "cust-claim-race")
	ctx := context.Background()
	first, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	if _, err := queries.New(first).OrderChargeInsert(ctx, queries.OrderChargeInsertParams{
		OrderID: o.ID, HolderScope: o.CustomerID, HolderKey: "k1", LeaseMs: time.Minute.Milliseconds(),
	}); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := pay(b.svc, o, "k2", "")
		second <- err
	}()
	pgtest.WaitLockWaiters(t, b.pool, 1)
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.As(err, new(*payment.InFlightError)) {
		t.Fatalf("second key: err = %v, want *InFlightError", err)
	}
	if n := b.gatewayCalls(o); n != 0 {
		t.Fatalf("gateway calls = %d, want 0", n)
	}
	if n := b.keyCount(t, o.ID); n != 0 {
		t.Fatalf("keys stored = %d, want 0 (an in-flight answer stores nothing)", n)
	}
}

func TestPayGatewayNotAboutThePayment(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	// 4xx answers that say "not now" or "your side is wrong": none of them
	// is stored, so the retry after the fix charges.
	for _, status := range []int{
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests,
	} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			o := b.newOrder(t, fmt.Sprintf("cust-%d", status))
			wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"type":"about:blank","title":%q,"status":%d}`, http.StatusText(status), status)
			}))
			defer wrong.Close()
			misconfigured := switches.Payments(payment.NewService(b.pool, payment.NewGatewayClient(wrong.URL, nil), b.cfg), b.off)
			if _, err := pay(misconfigured, o, "k1", ""); !errors.Is(err, payment.ErrGatewayUnavailable) {
				t.Fatalf("err = %v, want ErrGatewayUnavailable (502), not a stored refusal", err)
			}
			assertReleased(t, b.keyRow(t, o.CustomerID, "k1").LockedUntil)
			mustCharge(t, b.svc, o, "k1")
		})
	}
}

// TestPayCompletesAfterTheClientHangsUp: the client's context is cancelled
// while the gateway call is in flight. Phase 3 must still run (on a context
// of its own), releasing the key and the order's charge at once instead of
// leaving them locked until LockTimeout.
func TestPayCompletesAfterTheClientHangsUp(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{LockTimeout: time.Minute})
	b.control(t, fakes.GatewayControl{DelayMS: 300})
	o := b.newOrder(t, "cust-hang-up")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.svc.Pay(ctx, payment.Request{OrderID: o.ID, Key: "k1"})
		done <- err
	}()
	waitFor(t, func() bool { return b.gatewayCalls(o) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, payment.ErrGatewayUnavailable) {
		t.Fatalf("err = %v, want ErrGatewayUnavailable", err)
	}
	assertReleased(t, b.keyRow(t, o.CustomerID, "k1").LockedUntil)
	ch, err := queries.New(b.pool).OrderChargeGet(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	assertReleased(t, ch.LockedUntil)
	// The retry with the same key meets the charge the gateway made.
	mustCharge(t, b.svc, o, "k1")
	if n := len(b.charges(o)); n != 1 {
		t.Fatalf("gateway charges = %d, want 1", n)
	}
}

// mustBeAlreadyPaid checks the explicit answer to a key that comes after the
// order's charge: 409 "Order already paid".
func mustBeAlreadyPaid(t *testing.T, resp payment.Response) {
	t.Helper()
	if resp.Status != http.StatusConflict || !strings.Contains(string(resp.Body), "already paid") {
		t.Fatalf("answer = %d %s, want 409 order already paid", resp.Status, resp.Body)
	}
}
