package fakes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
)

func refund(chargeID string, amount int64) map[string]any {
	return map[string]any{"charge_id": chargeID, "amount_cents": amount}
}

// charged charges order o1 amount cents through POST /charges, under a key of
// its own, and returns the charge.
func charged(t *testing.T, b *bundle, amount int64) fakes.Charge {
	t.Helper()
	r := do(t, http.MethodPost, b.url+"/charges", "pay-"+t.Name(), charge("o1", amount))
	if r.status != http.StatusCreated {
		t.Fatalf("POST /charges = %d %s, want 201", r.status, r.body)
	}
	return decode[fakes.Charge](t, r)
}

// refundedEvents returns the payment.refunded webhooks the receiver got.
func (rc *receiver) refundedEvents() []received {
	var got []received
	for _, r := range rc.requests() {
		if r.event.Type == fakes.EventPaymentRefunded {
			got = append(got, r)
		}
	}
	return got
}

func TestRefundOncePerKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := charged(t, b, 10000)

	first := do(t, http.MethodPost, b.url+"/refunds", "refund-1", refund(c.ID, 10000))
	if first.status != http.StatusCreated || first.header.Get(fakes.ReplayedHeader) != "" {
		t.Fatalf("first POST /refunds = %d replayed=%q %s, want a fresh 201",
			first.status, first.header.Get(fakes.ReplayedHeader), first.body)
	}
	again := do(t, http.MethodPost, b.url+"/refunds", "refund-1", `{ "amount_cents":10000, "charge_id":"`+c.ID+`" }`)
	if again.status != first.status || !bytes.Equal(again.body, first.body) || again.header.Get(fakes.ReplayedHeader) != "true" {
		t.Errorf("replay = %d replayed=%q %s, want %d replayed=true %s",
			again.status, again.header.Get(fakes.ReplayedHeader), again.body, first.status, first.body)
	}

	rf := decode[fakes.Refund](t, first)
	refunds := decode[[]fakes.Refund](t, do(t, http.MethodGet, b.url+"/refunds", "", nil))
	if len(refunds) != 1 || refunds[0] != rf {
		t.Fatalf("GET /refunds = %+v, want exactly %+v", refunds, rf)
	}
	if !strings.HasPrefix(rf.ID, "re_") || rf.IdempotencyKey != "refund-1" || rf.ChargeID != c.ID ||
		rf.OrderID != "o1" || rf.AmountCents != 10000 || rf.CreatedAt.IsZero() {
		t.Errorf("refund = %+v, want re_... refund-1 %s o1 10000 with its time", rf, c.ID)
	}
	b.waitDelivered(t)
	if got := b.receiver.refundedEvents(); len(got) != 1 {
		t.Errorf("payment.refunded webhooks received = %d, want exactly one (the replay sends none)", len(got))
	}
}

func TestListRefundsIsAnArray(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := do(t, http.MethodGet, b.url+"/refunds", "", nil)
	if r.status != http.StatusOK || string(r.body) != "[]" {
		t.Errorf("GET /refunds with none = %d %s, want 200 []", r.status, r.body)
	}
}

func TestRefundWebhookIsSignedRetriedAndDescribesTheRefund(t *testing.T) {
	t.Parallel()
	// The charge's webhook gets the first 200; the refund's gets 500 twice.
	b := setup(t, http.StatusOK, http.StatusInternalServerError, http.StatusInternalServerError)
	c := charged(t, b, 4200)
	b.waitDelivered(t)
	do(t, http.MethodPost, b.url+"/refunds", "k", refund(c.ID, 1500))
	b.waitDelivered(t)

	got := b.receiver.refundedEvents()
	if len(got) != 3 {
		t.Fatalf("payment.refunded requests = %d, want 3 (two 500s, then the 200)", len(got))
	}
	for i, r := range got {
		if r.verifyErr != nil {
			t.Errorf("attempt %d: webhook.Verify refused the signature: %v", i+1, r.verifyErr)
		}
		if r.event.ID != got[0].event.ID || !strings.HasPrefix(r.event.ID, "evt_") {
			t.Errorf("attempt %d event id = %q, want evt_... repeated (%q)", i+1, r.event.ID, got[0].event.ID)
		}
	}
	var body struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(got[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"order_id": "o1", "amount_cents": float64(1500)}; len(body.Data) != len(want) ||
		body.Data["order_id"] != want["order_id"] || body.Data["amount_cents"] != want["amount_cents"] {
		t.Errorf("data = %v, want exactly %v", body.Data, want)
	}
}

func TestDuplicateWebhooksRepeatTheRefundEventID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := charged(t, b, 100)
	do(t, http.MethodPost, b.url+"/control/gateway", "", map[string]int{"duplicate_webhooks": 2})
	do(t, http.MethodPost, b.url+"/refunds", "k", refund(c.ID, 100))
	b.waitDelivered(t)

	var ids []string
	for _, r := range b.receiver.refundedEvents() {
		ids = append(ids, r.event.ID)
	}
	if len(ids) != 3 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("payment.refunded ids received = %v, want one id three times", ids)
	}
	if n := len(b.gateway.Refunds()); n != 1 {
		t.Errorf("refunds = %d, want 1", n)
	}
}

// chargesKey, as a key in TestRefundRefused, stands for the Idempotency-Key
// the charge was made with.
const chargesKey = "<the charge's key>"

func TestRefundRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		key    string
		body   func(c fakes.Charge) any
		status int
	}{
		{"missing key", "", func(c fakes.Charge) any { return refund(c.ID, 10) }, http.StatusBadRequest},
		{"unknown charge", "k", func(fakes.Charge) any { return refund("ch_nope", 10) }, http.StatusNotFound},
		{"more than the charge", "k", func(c fakes.Charge) any { return refund(c.ID, 101) }, http.StatusBadRequest},
		{"zero amount", "k", func(c fakes.Charge) any { return refund(c.ID, 0) }, http.StatusBadRequest},
		{"negative amount", "k", func(c fakes.Charge) any { return refund(c.ID, -5) }, http.StatusBadRequest},
		{"no charge", "k", func(fakes.Charge) any { return refund("", 10) }, http.StatusBadRequest},
		{"unknown field", "k", func(c fakes.Charge) any { return `{"charge_id":"` + c.ID + `","amount_cents":1,"order_id":"o1"}` }, http.StatusBadRequest},
		{"key reused with another amount", "used", func(c fakes.Charge) any { return refund(c.ID, 20) }, http.StatusUnprocessableEntity},
		{"key of the charge", chargesKey, func(c fakes.Charge) any { return refund(c.ID, 10) }, http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			c := charged(t, b, 100)
			if r := do(t, http.MethodPost, b.url+"/refunds", "used", refund(c.ID, 10)); r.status != http.StatusCreated {
				t.Fatalf("first refund = %d %s", r.status, r.body)
			}
			key := tt.key
			if key == chargesKey {
				key = c.IdempotencyKey
			}
			r := do(t, http.MethodPost, b.url+"/refunds", key, tt.body(c))
			if r.status != tt.status || r.header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("status = %d (%s) %s, want a %d problem", r.status, r.header.Get("Content-Type"), r.body, tt.status)
			}
			if n := len(b.gateway.Refunds()); n != 1 {
				t.Errorf("refunds = %d, want only the first one", n)
			}
		})
	}
}

// The same money asked back under another key is refused with 409: a key is
// a new refund, and a charge gives back at most what it took.
func TestRefundOfRefundedMoneyIsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		amounts []int64 // refunds of a 100-cent charge, each under its own key
		status  []int
	}{
		{"fully refunded", []int64{100, 100, 1}, []int{201, 409, 409}},
		{"more than what is left", []int64{60, 60, 40, 1}, []int{201, 409, 201, 409}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			c := charged(t, b, 100)
			var total int64
			for i, amount := range tt.amounts {
				r := do(t, http.MethodPost, b.url+"/refunds", "refund-"+string(rune('a'+i)), refund(c.ID, amount))
				if r.status != tt.status[i] || r.header.Get(fakes.ReplayedHeader) != "" {
					t.Errorf("refund %d of %d cents = %d %s, want %d", i+1, amount, r.status, r.body, tt.status[i])
				}
				if r.status == http.StatusCreated {
					total += amount
				}
			}
			var got int64
			for _, rf := range b.gateway.Refunds() {
				got += rf.AmountCents
			}
			if got != total || got > c.AmountCents {
				t.Errorf("cents refunded = %d, want %d of the charge's %d", got, total, c.AmountCents)
			}
			b.waitDelivered(t)
			if n, want := len(b.receiver.refundedEvents()), len(b.gateway.Refunds()); n != want {
				t.Errorf("payment.refunded webhooks = %d, want one per refund (%d)", n, want)
			}
		})
	}
}

// Of many requests racing to refund the same money under different keys,
// exactly one refunds it.
func TestConcurrentRefundsOfOneChargeRefundOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := charged(t, b, 100)
	const n = 20
	answers := b.race(t, n, "/refunds", func(i int) (string, any) { return "refund-" + string(rune('a'+i)), refund(c.ID, 100) })
	var statuses []int
	for _, a := range answers {
		statuses = append(statuses, a.status)
	}
	slices.Sort(statuses)
	if want := append([]int{201}, slices.Repeat([]int{409}, n-1)...); !slices.Equal(statuses, want) {
		t.Errorf("statuses = %v, want one 201 and %d 409s", statuses, n-1)
	}
	if got := b.gateway.Refunds(); len(got) != 1 {
		t.Errorf("refunds = %d, want 1: %+v", len(got), got)
	}
}

// A refused refund performs nothing and stores nothing: its key is free.
func TestRefusedRefundLeavesTheKeyFree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := charged(t, b, 100)
	if r := do(t, http.MethodPost, b.url+"/refunds", "k", refund("ch_nope", 100)); r.status != http.StatusNotFound {
		t.Fatalf("refund of an unknown charge = %d %s, want 404", r.status, r.body)
	}
	r := do(t, http.MethodPost, b.url+"/refunds", "k", refund(c.ID, 100))
	if r.status != http.StatusCreated || r.header.Get(fakes.ReplayedHeader) != "" {
		t.Errorf("the same key for a real charge = %d replayed=%q %s, want a fresh 201",
			r.status, r.header.Get(fakes.ReplayedHeader), r.body)
	}
}

// Charges and refunds share the gateway's fail_next count and its delay.
func TestRefundsShareTheChargesControls(t *testing.T) {
	t.Parallel()
	t.Run("one fail_next count", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := charged(t, b, 100)
		do(t, http.MethodPost, b.url+"/control/gateway", "", map[string]int{"fail_next": 1})
		if r := do(t, http.MethodPost, b.url+"/refunds", "k", refund(c.ID, 100)); r.status != http.StatusServiceUnavailable {
			t.Fatalf("refund while failing = %d %s, want 503", r.status, r.body)
		}
		if r := do(t, http.MethodPost, b.url+"/charges", "other", charge("o2", 100)); r.status != http.StatusCreated {
			t.Errorf("charge after the refund used fail_next = %d %s, want 201", r.status, r.body)
		}
	})
	t.Run("delay after refunding", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := charged(t, b, 100)
		if err := b.gateway.SetControl(fakes.GatewayControl{DelayMS: 2000}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if _, err := send(ctx, http.MethodPost, b.url+"/refunds", "slow", refund(c.ID, 100)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("slow refund: err = %v, want the client to time out", err)
		}
		if n := len(b.gateway.Refunds()); n != 1 {
			t.Fatalf("refunds after the client timed out = %d, want 1 (the money moved)", n)
		}
		if err := b.gateway.SetControl(fakes.GatewayControl{}); err != nil {
			t.Fatal(err)
		}
		r := do(t, http.MethodPost, b.url+"/refunds", "slow", refund(c.ID, 100))
		if r.status != http.StatusCreated || r.header.Get(fakes.ReplayedHeader) != "true" {
			t.Errorf("retry after timeout = %d replayed=%q, want the stored 201", r.status, r.header.Get(fakes.ReplayedHeader))
		}
		if n := len(b.gateway.Refunds()); n != 1 {
			t.Errorf("refunds after the retry = %d, want 1", n)
		}
	})
}
