package fakes_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
)

func TestWebhookIsSignedAndDescribesTheCharge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := decode[fakes.Charge](t, do(t, http.MethodPost, b.url+"/charges", "k", charge("o1", 4200)))
	b.waitDelivered(t)

	got := b.receiver.requests()
	if len(got) != 1 {
		t.Fatalf("webhooks received = %d, want 1", len(got))
	}
	if got[0].verifyErr != nil {
		t.Errorf("webhook.Verify refused the signature: %v", got[0].verifyErr)
	}
	ev := got[0].event
	want := fakes.EventData{OrderID: "o1", AmountCents: 4200, ChargeID: c.ID}
	if ev.Type != fakes.EventPaymentSucceeded || ev.Data != want || len(ev.ID) <= len("evt_") || ev.ID[:4] != "evt_" {
		t.Errorf("event = %+v, want evt_... payment.succeeded %+v", ev, want)
	}
}

func TestWebhookIsRetriedUntil2xx(t *testing.T) {
	t.Parallel()
	b := setup(t, http.StatusInternalServerError, http.StatusInternalServerError)
	do(t, http.MethodPost, b.url+"/charges", "k", charge("o1", 100))
	b.waitDelivered(t)
	time.Sleep(20 * time.Millisecond) // 10x the last backoff: a further attempt would show

	attempts := decode[[]fakes.DeliveryAttempt](t, do(t, http.MethodGet, b.url+"/webhook-deliveries", "", nil))
	var statuses []int
	for i, a := range attempts {
		statuses = append(statuses, a.StatusCode)
		if a.Attempt != i+1 || a.EventID != attempts[0].EventID {
			t.Errorf("attempt %d = %+v, want attempt %d of event %s", i, a, i+1, attempts[0].EventID)
		}
	}
	if want := []int{500, 500, 200}; !slices.Equal(statuses, want) {
		t.Errorf("attempt statuses = %v, want %v", statuses, want)
	}
	if ids := b.receiver.eventIDs(); len(ids) != 3 {
		t.Errorf("receiver got %d requests, want 3", len(ids))
	}
}

func TestWebhookGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t, slices.Repeat([]int{http.StatusBadGateway}, 100)...)
	do(t, http.MethodPost, b.url+"/charges", "k", charge("o1", 100))
	b.waitDelivered(t)
	if n := len(b.gateway.Deliveries()); n != 10 {
		t.Errorf("attempts = %d, want MaxAttempts (10)", n)
	}
}

func TestDuplicateWebhooksRepeatTheEventID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	do(t, http.MethodPost, b.url+"/control/gateway", "", map[string]int{"duplicate_webhooks": 2})
	do(t, http.MethodPost, b.url+"/charges", "k", charge("o1", 100))
	b.waitDelivered(t)

	ids := b.receiver.eventIDs()
	if len(ids) != 3 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("event ids received = %v, want one id three times", ids)
	}
	if n := len(b.gateway.Charges()); n != 1 {
		t.Errorf("charges = %d, want 1", n)
	}
}

func TestRedeliver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     any
		sent     int // webhooks received after the redelivery, the original included
		distinct int // distinct event ids among them
	}{
		{"no body: once more, same id", nil, 2, 1},
		{"three more, same id", map[string]any{"count": 3}, 4, 1},
		{"three more at once, same id", map[string]any{"count": 3, "concurrent": true}, 4, 1},
		{"new event ids", map[string]any{"count": 3, "new_event_id": true}, 4, 4},
		{"new event ids at once", map[string]any{"count": 3, "new_event_id": true, "concurrent": true}, 4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			c := decode[fakes.Charge](t, do(t, http.MethodPost, b.url+"/charges", "k", charge("o1", 100)))
			b.waitDelivered(t)

			r := do(t, http.MethodPost, b.url+"/charges/"+c.ID+"/redeliver", "", tt.body)
			if r.status != http.StatusAccepted {
				t.Fatalf("redeliver = %d %s, want 202", r.status, r.body)
			}
			answer := decode[struct {
				EventIDs []string `json:"event_ids"`
			}](t, r)
			b.waitDelivered(t)

			ids := b.receiver.eventIDs()
			if len(answer.EventIDs) != tt.sent-1 || len(ids) != tt.sent {
				t.Fatalf("answered %v, received %v; want %d redeliveries", answer.EventIDs, ids, tt.sent-1)
			}
			slices.Sort(ids)
			if n := len(slices.Compact(ids)); n != tt.distinct {
				t.Errorf("distinct event ids received = %d, want %d", n, tt.distinct)
			}
			if n := len(b.gateway.Charges()); n != 1 {
				t.Errorf("charges = %d, want 1: redelivery charges nothing", n)
			}
		})
	}
}

func TestRedeliverRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := decode[fakes.Charge](t, do(t, http.MethodPost, b.url+"/charges", "k", charge("o1", 100)))
	if r := do(t, http.MethodPost, b.url+"/charges/ch_nope/redeliver", "", nil); r.status != http.StatusNotFound {
		t.Errorf("redeliver unknown charge = %d, want 404", r.status)
	}
	if r := do(t, http.MethodPost, b.url+"/charges/"+c.ID+"/redeliver", "", `{"count":-1}`); r.status != http.StatusBadRequest {
		t.Errorf("redeliver count -1 = %d, want 400", r.status)
	}
}

func TestCloseStopsPendingDeliveries(t *testing.T) {
	t.Parallel()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(rcv.Close)
	gw := fakes.NewGateway(fakes.GatewayConfig{WebhookURL: rcv.URL, RetryBase: time.Hour})
	srv := httptest.NewServer(fakes.New(gw, fakes.NewNotifier()))
	t.Cleanup(srv.Close)
	do(t, http.MethodPost, srv.URL+"/charges", "k", charge("o1", 100))

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := gw.WaitDelivered(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitDelivered with a failing receiver = %v, want the deadline", err)
	}
	closed := make(chan struct{})
	go func() { gw.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not stop a delivery waiting an hour to retry")
	}
	if err := gw.WaitDelivered(t.Context()); err != nil {
		t.Errorf("WaitDelivered after Close = %v, want nil", err)
	}
}

func TestConcurrentRedeliveriesOverlap(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	inFlight, most := 0, 0
	rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(100 * time.Millisecond) // long enough for the others to arrive
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	gw := fakes.NewGateway(fakes.GatewayConfig{WebhookURL: rcv.URL})
	t.Cleanup(gw.Close)
	srv := httptest.NewServer(fakes.New(gw, fakes.NewNotifier()))
	t.Cleanup(srv.Close)

	c := decode[fakes.Charge](t, do(t, http.MethodPost, srv.URL+"/charges", "k", charge("o1", 100)))
	if err := gw.WaitDelivered(t.Context()); err != nil {
		t.Fatal(err)
	}
	do(t, http.MethodPost, srv.URL+"/charges/"+c.ID+"/redeliver", "", map[string]any{"count": 3, "concurrent": true})
	if err := gw.WaitDelivered(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 3 {
		t.Errorf("most webhooks in flight at once = %d, want 3", most)
	}
}

// A held webhook waits, undelivered, until the gateway lets it go: the
// crash matrix's late webhook, which arrives after the client's retries.
func TestHeldWebhookWaitsUntilReleased(t *testing.T) {
	t.Parallel()
	b := setup(t)
	do(t, http.MethodPost, b.url+"/control/gateway", "", map[string]bool{"hold_webhooks": true})
	do(t, http.MethodPost, b.url+"/charges", "k", charge("o1", 100))
	time.Sleep(100 * time.Millisecond) // five times the hold's polling: a delivery would show
	if n := len(b.gateway.Deliveries()); n != 0 {
		t.Fatalf("%d deliveries while the webhooks are held, want 0", n)
	}
	do(t, http.MethodPost, b.url+"/control/gateway", "", map[string]bool{"hold_webhooks": false})
	b.waitDelivered(t)
	if ids := b.receiver.eventIDs(); len(ids) != 1 {
		t.Errorf("receiver got %d webhooks once released, want 1", len(ids))
	}
}
