package fakes_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
)

// Told to refuse the refunds of one order (refuse_refunds_of), the gateway
// refuses every refund of that order's charge for good: the status it was
// given (402 by default), a problem naming the order, no refund, no
// webhook, nothing stored under the key, so the same request is refused
// again; each refusal is listed by GET /refund-refusals. Another order's
// refund goes through.
func TestRefundsOfOneOrderAreRefusedForGood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := charged(t, b, 10000)
	other := do(t, http.MethodPost, b.url+"/charges", "pay-other", charge("o2", 500))
	if other.status != http.StatusCreated {
		t.Fatalf("POST /charges for o2 = %d %s", other.status, other.body)
	}
	if r := do(t, http.MethodPost, b.url+"/control/gateway", "", map[string]any{"refuse_refunds_of": "o1"}); r.status != http.StatusOK {
		t.Fatalf("POST /control/gateway = %d %s, want 200", r.status, r.body)
	}

	for i := range 2 {
		r := do(t, http.MethodPost, b.url+"/refunds", "refund-o1", refund(c.ID, 10000))
		var p struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		if r.status != http.StatusPaymentRequired || p.Status != http.StatusPaymentRequired ||
			!strings.Contains(p.Detail, "order o1 cannot be refunded") || r.header.Get(fakes.ReplayedHeader) != "" {
			t.Errorf("refund %d of o1 = %d %s replayed=%q, want a fresh 402 naming the order", i+1, r.status, r.body, r.header.Get(fakes.ReplayedHeader))
		}
	}
	if r := do(t, http.MethodPost, b.url+"/refunds", "refund-o2", refund(decode[fakes.Charge](t, other).ID, 500)); r.status != http.StatusCreated {
		t.Errorf("refund of o2 = %d %s, want 201: only o1's refunds are refused", r.status, r.body)
	}

	refusals := decode[[]fakes.RefundRefusal](t, do(t, http.MethodGet, b.url+"/refund-refusals", "", nil))
	if len(refusals) != 2 {
		t.Fatalf("GET /refund-refusals = %+v, want the 2 refusals of o1", refusals)
	}
	for _, rf := range refusals {
		if rf.OrderID != "o1" || rf.ChargeID != c.ID || rf.IdempotencyKey != "refund-o1" || rf.Status != http.StatusPaymentRequired || rf.AmountCents != 10000 {
			t.Errorf("refusal %+v, want o1's charge %s under refund-o1, 402, 10000", rf, c.ID)
		}
	}
	if refunds := b.gateway.Refunds(); len(refunds) != 1 || refunds[0].OrderID != "o2" {
		t.Errorf("refunds made = %+v, want o2's only", refunds)
	}
	b.waitDelivered(t)
	for _, ev := range b.receiver.refundedEvents() {
		if strings.Contains(string(ev.body), `"o1"`) {
			t.Errorf("a payment.refunded was sent for o1, whose refund was refused: %s", ev.body)
		}
	}
}

// refuse_status sets the refusal's status, a client error only: a 5xx or
// a 429 would say "not now", not "no".
func TestRefuseStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := charged(t, b, 100)
	if r := do(t, http.MethodPost, b.url+"/control/gateway", "", map[string]any{"refuse_refunds_of": "o1", "refuse_status": 422}); r.status != http.StatusOK {
		t.Fatalf("POST /control/gateway = %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodPost, b.url+"/refunds", "k", refund(c.ID, 100)); r.status != http.StatusUnprocessableEntity {
		t.Errorf("refund = %d %s, want the 422 it was told", r.status, r.body)
	}
	for _, body := range []string{`{"refuse_status":503}`, `{"refuse_status":399}`, `{"refuse_refunds_of":5}`} {
		if r := do(t, http.MethodPost, b.url+"/control/gateway", "", body); r.status != http.StatusBadRequest {
			t.Errorf("POST /control/gateway %s = %d, want 400", body, r.status)
		}
	}
}
