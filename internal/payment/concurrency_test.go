package payment_test

import (
	"bytes"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestPayConcurrent(t *testing.T) {
	t.Parallel()
	const lock = 5 * time.Second
	b := setup(t, payment.Config{LockTimeout: lock})
	// A slow gateway keeps the first request in flight while the others arrive.
	b.control(t, fakes.GatewayControl{DelayMS: 300})

	t.Run("a request while the first is at the gateway is told to retry later", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-inflight")
		first := make(chan error, 1)
		go func() {
			_, err := pay(b.svc, o, "k1", "")
			first <- err
		}()
		waitFor(t, func() bool { return b.gatewayCalls(o) == 1 })
		_, err := pay(b.svc, o, "k1", "")
		var inFlight *payment.InFlightError
		if !errors.As(err, &inFlight) {
			t.Fatalf("err = %v, want *InFlightError", err)
		}
		if ra := inFlight.RetryAfter; ra < time.Second || ra > lock || ra%time.Second != 0 {
			t.Fatalf("RetryAfter = %s, want whole seconds in [1s, %s]", ra, lock)
		}
		if err := <-first; err != nil {
			t.Fatalf("first request: %v", err)
		}
		if n := b.gatewayCalls(o); n != 1 {
			t.Fatalf("gateway calls = %d, want 1", n)
		}
	})

	t.Run("20 concurrent requests with one key charge once", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-twenty")
		results := payConcurrently(b.svc, o, "k1", 20)
		fresh, replayed, inFlight := tally(t, results)
		if fresh != 1 || fresh+replayed+inFlight != 20 {
			t.Fatalf("fresh=%d replayed=%d in-flight=%d, want 1 fresh and the rest replayed or in flight",
				fresh, replayed, inFlight)
		}
		if n := len(b.charges(o)); n != 1 {
			t.Fatalf("gateway charges = %d, want 1", n)
		}
		if n := b.gatewayCalls(o); n != 1 {
			t.Fatalf("gateway calls = %d, want 1 (only the key's holder may call)", n)
		}
	})
}

// result is one Pay outcome.
type result struct {
	resp payment.Response
	err  error
}

// payConcurrently releases n Pay calls with the same key at the same moment.
func payConcurrently(svc *payment.Service, o queries.Order, key string, n int) []result {
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			<-start
			resp, err := pay(svc, o, key, "")
			results[i] = result{resp, err}
		})
	}
	close(start)
	wg.Wait()
	return results
}

// tally counts fresh charges, replays of the same 201 and in-flight refusals;
// any other outcome fails the test.
func tally(t *testing.T, results []result) (fresh, replayed, inFlight int) {
	t.Helper()
	var body []byte
	for _, r := range results {
		var ife *payment.InFlightError
		switch {
		case errors.As(r.err, &ife):
			inFlight++
			continue
		case r.err != nil:
			t.Fatalf("unexpected error: %v", r.err)
		case r.resp.Status != http.StatusCreated:
			t.Fatalf("unexpected response %d %s", r.resp.Status, r.resp.Body)
		case r.resp.Replayed:
			replayed++
		default:
			fresh++
		}
		if body != nil && !bytes.Equal(body, r.resp.Body) {
			t.Fatalf("two different 201 bodies:\n%s\n%s", body, r.resp.Body)
		}
		body = r.resp.Body
	}
	return fresh, replayed, inFlight
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
