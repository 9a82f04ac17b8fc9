package payment_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/payment"
)

// TestLeasesOnTheDatabasesClock: the leases of the key and of the order's
// charge are written as now() + LockTimeout and compared with now() in SQL,
// so api hosts whose clocks disagree with the database, and with each other,
// cannot take over a lease while its holder is at the gateway.
//
// The holder's clock is an hour behind: a lease it computed itself would be
// born expired. The others' clocks are an hour ahead and an hour behind: a
// lease they compared themselves would look expired, or hold for an hour. The
// api's clock is injected (Config.Clock) because a faked clock at the process
// level, Debian's faketime, replaces libc's time functions, and a Go binary
// reads the clock without calling libc.
func TestLeasesOnTheDatabasesClock(t *testing.T) {
	t.Parallel()
	const lock = 30 * time.Second
	b := setup(t, payment.Config{LockTimeout: lock})
	o := b.newOrder(t, "cust-clock-skew")
	skewed := func(d time.Duration) func() time.Time {
		return func() time.Time { return time.Now().Add(d) }
	}

	// The holder's gateway call reaches the gateway only when the test lets it.
	arrived, answer := make(chan struct{}), make(chan struct{})
	gateway, err := url.Parse(b.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(gateway)
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-answer
		proxy.ServeHTTP(w, r)
	}))
	defer held.Close()
	release := sync.OnceFunc(func() { close(answer) })
	defer release() // before held.Close, which waits for the held call
	holder := payment.NewService(b.pool, payment.NewGatewayClient(held.URL, nil),
		payment.Config{LockTimeout: lock, Clock: skewed(-time.Hour)})
	first := make(chan result, 1)
	go func() {
		resp, err := pay(holder, o, "k1", "")
		first <- result{resp, err}
	}()
	<-arrived

	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		other := payment.NewService(b.pool, b.client, payment.Config{LockTimeout: lock, Clock: skewed(skew)})
		for _, key := range []string{"k1", "k2"} {
			_, err := pay(other, o, key, "")
			var inFlight *payment.InFlightError
			if !errors.As(err, &inFlight) {
				t.Fatalf("clock %s, key %s: err = %v, want *InFlightError (the holder is at the gateway)", skew, key, err)
			}
			// k1 meets the key's lock; k2, a new key, the order's charge's.
			if wantOrder := key != "k1"; inFlight.Order != wantOrder {
				t.Fatalf("clock %s, key %s: in flight on the order's charge = %v, want %v: a lock was taken over",
					skew, key, inFlight.Order, wantOrder)
			}
			if ra := inFlight.RetryAfter; ra < time.Second || ra > lock {
				t.Fatalf("clock %s, key %s: RetryAfter = %s, want [1s, %s] (the lock's time left)", skew, key, ra, lock)
			}
		}
	}
	if n := b.gatewayCalls(o); n != 0 {
		t.Fatalf("gateway calls while the holder waits = %d, want 0: a lease was taken over", n)
	}

	release()
	r := <-first
	if r.err != nil || r.resp.Status != http.StatusCreated || r.resp.Replayed {
		t.Fatalf("holder = %d replayed=%v, %v; want a fresh 201", r.resp.Status, r.resp.Replayed, r.err)
	}
	if n, charges := b.gatewayCalls(o), len(b.charges(o)); n != 1 || charges != 1 {
		t.Fatalf("gateway calls = %d, charges = %d; want 1 and 1", n, charges)
	}
	again, err := pay(b.svc, o, "k1", "")
	if err != nil || !again.Replayed || !bytes.Equal(again.Body, r.resp.Body) {
		t.Fatalf("k1 again = %d replayed=%v, %v; want the holder's 201 replayed", again.Status, again.Replayed, err)
	}
}
