package payment_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// The conditional UPDATEs of the order's charge (sql/queries/order_charges.sql)
// decide races that only concurrent requests reach. Each test here holds the
// order's charge row locked while eight requests with eight keys queue on it,
// then lets them go at once: under READ COMMITTED each waiter re-checks its
// WHERE clause against the row the one before it left, and exactly one wins.

// Eight take-overs of one expired charge: one calls the gateway, seven are
// told the charge is in flight (OrderChargeTakeOver's "locked_until < now()").
func TestTakeOverRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	o := b.newOrder(t, "cust-take-over-race")
	crash(t, b, payment.Config{LockTimeout: 100 * time.Millisecond}, o, "k0")
	waitChargeLockExpired(t, b, o)
	results := raceOnTheChargeRow(t, b, o)
	mustHaveOneWinner(t, results)
	if n := b.gatewayCalls(o); n != 1 {
		t.Fatalf("gateway calls = %d, want 1: the take-over was won more than once", n)
	}
}

// Eight next attempts after a refusal: one starts attempt 2 and calls the
// gateway, seven are told the charge is in flight (OrderChargeRetry's
// "attempt = $5 AND state = 'refused'").
func TestNextAttemptRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	o := b.newOrder(t, "cust-next-attempt-race")
	b.control(t, fakes.GatewayControl{FailNext: 1, FailStatus: http.StatusPaymentRequired})
	mustRefuse(t, b.svc, o, "k0", http.StatusPaymentRequired)
	results := raceOnTheChargeRow(t, b, o)
	mustHaveOneWinner(t, results)
	if n := b.gatewayCalls(o); n != 2 {
		t.Fatalf("gateway calls = %d, want 2 (the refusal and one attempt after it)", n)
	}
	ch, err := queries.New(b.pool).OrderChargeGet(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Attempt != 2 || ch.State != "charged" {
		t.Fatalf("order's charge = attempt %d %s, want attempt 2 charged", ch.Attempt, ch.State)
	}
}

// A holder whose lease expired during a slow gateway call, and whose call
// then failed, releases only its own lock: the request that took the charge
// over meanwhile keeps its lock (OrderChargeRelease's holder check), so no
// third request can call the gateway beside it.
func TestReleaseLeavesTheNextHoldersLock(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	o := b.newOrder(t, "cust-release-holder")
	arrived, answer := make(chan struct{}), make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(arrived)
		<-answer
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"type":"about:blank","title":"Service Unavailable","status":503}`)
	}))
	defer slow.Close()
	first := payment.NewService(b.pool, payment.NewGatewayClient(slow.URL, nil), payment.Config{LockTimeout: 100 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := pay(first, o, "k1", "")
		done <- err
	}()
	<-arrived
	waitChargeLockExpired(t, b, o)
	won, err := queries.New(b.pool).OrderChargeTakeOver(context.Background(), queries.OrderChargeTakeOverParams{
		OrderID: o.ID, Attempt: 1, HolderScope: o.CustomerID, HolderKey: "k2", LeaseMs: time.Minute.Milliseconds(),
	})
	if err != nil || won != 1 {
		t.Fatalf("k2 takes the charge over: %d, %v; want 1 row", won, err)
	}
	close(answer)
	if err := <-done; !errors.Is(err, payment.ErrGatewayUnavailable) {
		t.Fatalf("k1: err = %v, want ErrGatewayUnavailable (the 503)", err)
	}
	ch, err := queries.New(b.pool).OrderChargeGet(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ch.HolderKey != "k2" || !ch.Held {
		t.Fatalf("order's charge: holder %s, locked until %v; want k2's lock kept", ch.HolderKey, ch.LockedUntil)
	}
}

// raceOnTheChargeRow locks the order's charge row, starts eight payments
// with eight new keys, waits until all eight queue on the lock, and lets
// them go.
func raceOnTheChargeRow(t *testing.T, b *bundle, o queries.Order) []result {
	t.Helper()
	ctx := context.Background()
	hold, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, "SELECT 1 FROM order_charges WHERE order_id = $1 FOR UPDATE", o.ID); err != nil {
		t.Fatal(err)
	}
	results := make([]result, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			resp, err := pay(b.svc, o, fmt.Sprintf("racer-%d", i), "")
			results[i] = result{resp, err}
		})
	}
	pgtest.WaitLockWaiters(t, b.pool, len(results))
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return results
}

// mustHaveOneWinner checks that one request charged and every other was told
// the charge is in flight.
func mustHaveOneWinner(t *testing.T, results []result) {
	t.Helper()
	var charged, inFlight int
	for _, r := range results {
		switch {
		case errors.As(r.err, new(*payment.InFlightError)):
			inFlight++
		case r.err == nil && r.resp.Status == http.StatusCreated:
			charged++
		default:
			t.Fatalf("unexpected answer: %d %s, %v", r.resp.Status, r.resp.Body, r.err)
		}
	}
	if charged != 1 || inFlight != len(results)-1 {
		t.Fatalf("charged %d, in flight %d; want 1 and %d", charged, inFlight, len(results)-1)
	}
}
