package payment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestPay(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})

	t.Run("a retry gets the stored response byte for byte and charges nothing", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-replay")
		first := mustCharge(t, b.svc, o, "k1")
		// Same request, written differently: whitespace and a spelt-out default.
		again, err := pay(b.svc, o, "k1", ` { "payment_method" : "pm_card" } `)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed || again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
			t.Fatalf("retry = %d replayed=%v %s, want %d replayed=true %s",
				again.Status, again.Replayed, again.Body, first.Status, first.Body)
		}
		if n := len(b.charges(o)); n != 1 {
			t.Fatalf("gateway charges = %d, want 1", n)
		}
		if n := b.gatewayCalls(o); n != 1 {
			t.Fatalf("gateway calls = %d, want 1 (the retry must not reach the gateway)", n)
		}
		got := decodeCharged(t, first.Body)
		if got.OrderID != o.ID.String() || got.Status != "charged" || got.Charge.AmountCents != o.AmountCents ||
			got.Charge.IdempotencyKey != payment.ChargeKey(o.ID, 1) {
			t.Fatalf("201 body = %+v", got)
		}
	})

	t.Run("the same key with another body is refused and charges nothing", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-mismatch")
		mustCharge(t, b.svc, o, "k1")
		_, err := pay(b.svc, o, "k1", `{"payment_method":"pm_other_card"}`)
		if !errors.Is(err, payment.ErrKeyMismatch) {
			t.Fatalf("err = %v, want ErrKeyMismatch", err)
		}
		if n := b.gatewayCalls(o); n != 1 {
			t.Fatalf("gateway calls = %d, want 1", n)
		}
	})

	t.Run("the same key on another order of the customer is refused", func(t *testing.T) {
		t.Parallel()
		o1, o2 := b.newOrder(t, "cust-two-orders"), b.newOrder(t, "cust-two-orders")
		mustCharge(t, b.svc, o1, "k1")
		if _, err := pay(b.svc, o2, "k1", ""); !errors.Is(err, payment.ErrKeyMismatch) {
			t.Fatalf("err = %v, want ErrKeyMismatch", err)
		}
		if n := b.gatewayCalls(o2); n != 0 {
			t.Fatalf("gateway calls for the second order = %d, want 0", n)
		}
	})

	t.Run("the same key from another customer is another key", func(t *testing.T) {
		t.Parallel()
		o1, o2 := b.newOrder(t, "cust-scope-a"), b.newOrder(t, "cust-scope-b")
		mustCharge(t, b.svc, o1, "shared-key")
		mustCharge(t, b.svc, o2, "shared-key")
	})

	t.Run("a missing or unusable key is refused before anything is written", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-nokey")
		for _, key := range []string{"", strings.Repeat("k", payment.MaxKeyLength+1), "k\x00"} {
			if _, err := pay(b.svc, o, key, ""); !errors.Is(err, payment.ErrKeyMissing) {
				t.Errorf("key %q: err = %v, want ErrKeyMissing", key, err)
			}
		}
		if n := b.keyCount(t, o.ID); n != 0 {
			t.Fatalf("keys stored = %d, want 0", n)
		}
		if n := b.gatewayCalls(o); n != 0 {
			t.Fatalf("gateway calls = %d, want 0", n)
		}
	})

	t.Run("an invalid body is refused naming the field", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-badbody")
		_, err := pay(b.svc, o, "k1", `{"payment_method":42}`)
		if !errors.Is(err, payment.ErrInvalidBody) || !strings.Contains(err.Error(), "payment_method") {
			t.Fatalf("err = %v, want ErrInvalidBody naming payment_method", err)
		}
		if n := b.keyCount(t, o.ID); n != 0 {
			t.Fatalf("keys stored = %d, want 0", n)
		}
	})

	t.Run("an unknown order is not found and nothing is written", func(t *testing.T) {
		t.Parallel()
		_, err := b.svc.Pay(context.Background(), payment.Request{OrderID: uuid.New(), Key: "k1"})
		if !errors.Is(err, order.ErrNotFound) {
			t.Fatalf("err = %v, want order.ErrNotFound", err)
		}
	})

	t.Run("a paid order is not charged again under a new key", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-paid")
		if _, _, err := order.MarkPaid(context.Background(), queries.New(b.pool), o.ID, "msg-1"); err != nil {
			t.Fatal(err)
		}
		first := mustRefuse(t, b.svc, o, "k-new", http.StatusConflict)
		again, err := pay(b.svc, o, "k-new", "")
		if err != nil || !again.Replayed || !bytes.Equal(again.Body, first.Body) {
			t.Fatalf("retry = %+v, %v; want the stored 409", again, err)
		}
		if n := b.gatewayCalls(o); n != 0 {
			t.Fatalf("gateway calls = %d, want 0", n)
		}
	})

	t.Run("an order charged under another key is not charged again", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-charged")
		mustCharge(t, b.svc, o, "k1")
		mustRefuse(t, b.svc, o, "k2", http.StatusConflict)
		if n := b.gatewayCalls(o); n != 1 {
			t.Fatalf("gateway calls = %d, want 1", n)
		}
	})
}

// mustRefuse pays and checks for a stored problem+json answer with status.
func mustRefuse(t *testing.T, svc *payment.Service, o queries.Order, key string, status int) payment.Response {
	t.Helper()
	resp, err := pay(svc, o, key, "")
	if err != nil {
		t.Fatalf("pay: %v", err)
	}
	var p struct {
		Type, Title, Detail string
		Status              int
	}
	if resp.Status != status || resp.Replayed || json.Unmarshal(resp.Body, &p) != nil || p.Status != status || p.Title == "" {
		t.Fatalf("pay = %d replayed=%v %s, want a %d problem", resp.Status, resp.Replayed, resp.Body, status)
	}
	return resp
}
