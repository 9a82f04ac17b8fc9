package fakes_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
)

func TestChargeOncePerKey(t *testing.T) {
	t.Parallel()
	b := setup(t)

	first := do(t, http.MethodPost, b.url+"/charges", "key-1", charge("o1", 10000))
	if first.status != http.StatusCreated {
		t.Fatalf("first POST /charges = %d %s, want 201", first.status, first.body)
	}
	if h := first.header.Get(fakes.ReplayedHeader); h != "" {
		t.Errorf("first answer has %s: %q, want none", fakes.ReplayedHeader, h)
	}
	// Same request, different whitespace: still the same request.
	again := do(t, http.MethodPost, b.url+"/charges", "key-1", `{ "currency":"BRL", "amount_cents":10000, "order_id":"o1" }`)
	if again.status != first.status || !bytes.Equal(again.body, first.body) {
		t.Errorf("replay = %d %s, want %d %s", again.status, again.body, first.status, first.body)
	}
	if h := again.header.Get(fakes.ReplayedHeader); h != "true" {
		t.Errorf("replay %s = %q, want true", fakes.ReplayedHeader, h)
	}

	c := decode[fakes.Charge](t, first)
	charges := decode[[]fakes.Charge](t, do(t, http.MethodGet, b.url+"/charges", "", nil))
	if len(charges) != 1 || charges[0] != c {
		t.Fatalf("GET /charges = %+v, want exactly %+v", charges, c)
	}
	if c.IdempotencyKey != "key-1" || c.OrderID != "o1" || c.AmountCents != 10000 || c.Currency != "BRL" {
		t.Errorf("charge = %+v, want key-1 o1 10000 BRL", c)
	}
	b.waitDelivered(t)
	if ids := b.receiver.eventIDs(); len(ids) != 1 {
		t.Errorf("webhooks received = %v, want exactly one (the replay sends none)", ids)
	}
}

func TestChargeRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		key    string
		body   any
		status int
	}{
		{"missing key", "", charge("o1", 100), http.StatusBadRequest},
		{"key reused with another amount", "used", charge("o1", 999), http.StatusUnprocessableEntity},
		{"key reused for another order", "used", charge("o2", 100), http.StatusUnprocessableEntity},
		{"malformed JSON", "k", `{"order_id":`, http.StatusBadRequest},
		{"unknown field", "k", `{"order_id":"o1","amount_cents":1,"currency":"BRL","tip":1}`, http.StatusBadRequest},
		{"trailing data", "k", `{"order_id":"o1","amount_cents":1,"currency":"BRL"} {}`, http.StatusBadRequest},
		{"zero amount", "k", charge("o1", 0), http.StatusBadRequest},
		{"negative amount", "k", charge("o1", -5), http.StatusBadRequest},
		{"no order", "k", charge("", 100), http.StatusBadRequest},
		{"empty body", "k", "", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if r := do(t, http.MethodPost, b.url+"/charges", "used", charge("o1", 100)); r.status != http.StatusCreated {
				t.Fatalf("first charge = %d %s", r.status, r.body)
			}
			r := do(t, http.MethodPost, b.url+"/charges", tt.key, tt.body)
			if r.status != tt.status {
				t.Errorf("status = %d %s, want %d", r.status, r.body, tt.status)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q, want application/problem+json", ct)
			}
			if p := decode[map[string]any](t, r); p["status"] != float64(tt.status) || p["title"] == "" || p["detail"] == "" {
				t.Errorf("problem = %v, want type, title, status %d and detail", p, tt.status)
			}
			if n := len(b.gateway.Charges()); n != 1 {
				t.Errorf("charges = %d, want only the first one", n)
			}
		})
	}
}

func TestConcurrentRequestsOneKeyChargeOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 20
	answers := b.race(t, n, "/charges", func(int) (string, any) { return "same-key", charge("o1", 10000) })

	replayed := 0
	for _, a := range answers {
		if a.status != http.StatusCreated || !bytes.Equal(a.body, answers[0].body) {
			t.Errorf("answer = %d %s, want 201 %s", a.status, a.body, answers[0].body)
		}
		if a.header.Get(fakes.ReplayedHeader) == "true" {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Errorf("replayed answers = %d, want %d", replayed, n-1)
	}
	if got := b.gateway.Charges(); len(got) != 1 {
		t.Fatalf("charges = %d, want 1: %+v", len(got), got)
	}
	b.waitDelivered(t)
	if ids := b.receiver.eventIDs(); len(ids) != 1 {
		t.Errorf("webhooks received = %v, want exactly one event", ids)
	}
}

func TestFailNextChargesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctl := do(t, http.MethodPost, b.url+"/control/gateway", "", map[string]int{"fail_next": 2})
	if got := decode[fakes.GatewayControl](t, ctl); ctl.status != http.StatusOK || got.FailNext != 2 {
		t.Fatalf("POST /control/gateway = %d %s, want 200 with fail_next 2", ctl.status, ctl.body)
	}
	for i := range 2 {
		if r := do(t, http.MethodPost, b.url+"/charges", "k", charge("o1", 100)); r.status != http.StatusServiceUnavailable {
			t.Fatalf("attempt %d = %d %s, want 503", i+1, r.status, r.body)
		}
	}
	if n := len(b.gateway.Charges()); n != 0 {
		t.Fatalf("charges after 503s = %d, want 0", n)
	}
	if r := do(t, http.MethodPost, b.url+"/charges", "k", charge("o1", 100)); r.status != http.StatusCreated || r.header.Get(fakes.ReplayedHeader) != "" {
		t.Fatalf("retry with the same key = %d %s, want a fresh 201", r.status, r.body)
	}
	if n := len(b.gateway.Charges()); n != 1 {
		t.Errorf("charges = %d, want 1", n)
	}
	if got := decode[fakes.GatewayControl](t, do(t, http.MethodGet, b.url+"/control/gateway", "", nil)); got != (fakes.GatewayControl{}) {
		t.Errorf("GET /control/gateway = %+v, want fail_next used up", got)
	}
}

func TestDelayChargesBeforeTheTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.gateway.SetControl(fakes.GatewayControl{DelayMS: 2000}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/charges", bytes.NewBufferString(`{"order_id":"o1","amount_cents":100,"currency":"BRL"}`))
	req.Header.Set(fakes.IdempotencyKeyHeader, "slow")
	if resp, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			resp.Body.Close()
		}
		t.Fatalf("slow charge: err = %v, want the client to time out", err)
	}
	if n := len(b.gateway.Charges()); n != 1 {
		t.Fatalf("charges after the client timed out = %d, want 1 (the effect happened)", n)
	}
	if err := b.gateway.SetControl(fakes.GatewayControl{}); err != nil {
		t.Fatal(err)
	}
	r := do(t, http.MethodPost, b.url+"/charges", "slow", charge("o1", 100))
	if r.status != http.StatusCreated || r.header.Get(fakes.ReplayedHeader) != "true" {
		t.Errorf("retry after timeout = %d replayed=%q, want the stored 201", r.status, r.header.Get(fakes.ReplayedHeader))
	}
	if n := len(b.gateway.Charges()); n != 1 {
		t.Errorf("charges after the retry = %d, want 1", n)
	}
}

func TestControlRefusesBadSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, body := range []string{`{"fail_next":-1}`, `{"delay_ms":"x"}`, `{"surprise":1}`} {
		if r := do(t, http.MethodPost, b.url+"/control/gateway", "", body); r.status != http.StatusBadRequest {
			t.Errorf("POST /control/gateway %s = %d, want 400", body, r.status)
		}
		if r := do(t, http.MethodPost, b.url+"/control/notifications", "", body); r.status != http.StatusBadRequest {
			t.Errorf("POST /control/notifications %s = %d, want 400", body, r.status)
		}
	}
}

// A gateway forgets its keys after a while (POST /control/gateway/forget-keys
// plays that day): the same key then charges again, and the charge made
// before stays made. This is why the service must not send a paid order to
// the gateway again, whatever key it holds.
func TestForgottenKeyChargesAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := do(t, http.MethodPost, b.url+"/charges", "key-1", charge("o1", 10000))
	if first.status != http.StatusCreated {
		t.Fatalf("first POST /charges = %d %s, want 201", first.status, first.body)
	}
	forgot := do(t, http.MethodPost, b.url+"/control/gateway/forget-keys", "", nil)
	if forgot.status != http.StatusOK || decode[map[string]int](t, forgot)["forgotten"] != 1 {
		t.Fatalf("POST /control/gateway/forget-keys = %d %s, want 200 {\"forgotten\":1}", forgot.status, forgot.body)
	}
	again := do(t, http.MethodPost, b.url+"/charges", "key-1", charge("o1", 10000))
	if again.status != http.StatusCreated || again.header.Get(fakes.ReplayedHeader) != "" {
		t.Fatalf("same key after forgetting = %d replayed=%q, want a new 201", again.status, again.header.Get(fakes.ReplayedHeader))
	}
	if charges := decode[[]fakes.Charge](t, do(t, http.MethodGet, b.url+"/charges", "", nil)); len(charges) != 2 {
		t.Fatalf("charges = %d, want 2: the forgotten key charged again", len(charges))
	}
}
