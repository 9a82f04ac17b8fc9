package payment_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/payment"
)

func TestPayGatewayUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	// Subtests run one after the other: fail_next is the gateway's, not an order's.

	t.Run("a 503 is not stored: the key is released and an immediate retry charges once", func(t *testing.T) {
		o := b.newOrder(t, "cust-503")
		b.control(t, fakes.GatewayControl{FailNext: 1})
		if _, err := pay(b.svc, o, "k1", ""); !errors.Is(err, payment.ErrGatewayUnavailable) {
			t.Fatalf("err = %v, want ErrGatewayUnavailable", err)
		}
		assertReleased(t, b.keyRow(t, o.CustomerID, "k1").LockedUntil)
		mustCharge(t, b.svc, o, "k1")
		if n := len(b.charges(o)); n != 1 {
			t.Fatalf("gateway charges = %d, want 1", n)
		}
	})

	t.Run("an unreachable gateway is not stored either", func(t *testing.T) {
		o := b.newOrder(t, "cust-unreachable")
		down := httptest.NewServer(http.NotFoundHandler())
		down.Close()
		svc := payment.NewService(b.pool, payment.NewGatewayClient(down.URL, nil), payment.Config{})
		if _, err := pay(svc, o, "k1", ""); !errors.Is(err, payment.ErrGatewayUnavailable) {
			t.Fatalf("err = %v, want ErrGatewayUnavailable", err)
		}
		assertReleased(t, b.keyRow(t, o.CustomerID, "k1").LockedUntil)
		mustCharge(t, b.svc, o, "k1")
	})
}

func assertReleased(t *testing.T, lockedUntil *time.Time) {
	t.Helper()
	if lockedUntil == nil || lockedUntil.After(time.Now()) {
		t.Fatalf("locked_until = %v, want a time in the past (released)", lockedUntil)
	}
}

func TestPayGatewayRefusal(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})

	t.Run("a 4xx is stored as a 402 and replayed without calling the gateway again", func(t *testing.T) {
		t.Parallel()
		o := b.newOrder(t, "cust-refused")
		// Make the gateway refuse our call for good: its key already holds a
		// charge for another amount, so it answers 422 to our request, and
		// would to every retry of it (the fake declines no cards otherwise).
		if _, err := b.client.Charge(context.Background(), payment.ChargeKey(o.ID, 1), payment.ChargeRequest{
			OrderID: o.ID.String(), AmountCents: o.AmountCents + 1, Currency: o.Currency,
		}); err != nil {
			t.Fatal(err)
		}
		first := mustRefuse(t, b.svc, o, "k1", http.StatusPaymentRequired)
		var p struct{ Detail string }
		if err := json.Unmarshal(first.Body, &p); err != nil || !strings.Contains(p.Detail, "422") {
			t.Fatalf("402 body %s: want a detail naming the gateway's 422", first.Body)
		}
		again, err := pay(b.svc, o, "k1", "")
		if err != nil || !again.Replayed || again.Status != first.Status || string(again.Body) != string(first.Body) {
			t.Fatalf("retry = %d replayed=%v %s, %v; want the stored 402", again.Status, again.Replayed, again.Body, err)
		}
		if n := b.gatewayCalls(o); n != 2 {
			t.Fatalf("gateway calls = %d, want 2 (the setup call and the first Pay)", n)
		}
	})
}
