package payment_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// An order that is no longer pending never reaches the gateway again, whatever
// its charge row says (charge.go, the first case of claimCharge). The
// gateway's memory of ChargeKey is no guard: gateways forget keys.

// The first call's answer is lost (the client times out, the gateway
// charged), the provider's webhook pays the order, the gateway forgets its
// keys, and after the lease a new key pays: it must be told the order is
// paid, not take over the attempt and charge a second time.
func TestPaidOrderIsNotChargedAgainOnceTheGatewayForgets(t *testing.T) {
	t.Parallel()
	cfg := payment.Config{LockTimeout: 300 * time.Millisecond}
	b := setup(t, cfg)
	o := lostAnswer(t, b, "cust-gateway-forgot")
	if _, _, err := order.MarkPaid(context.Background(), queries.New(b.pool), o.ID, "webhook:evt_paid"); err != nil {
		t.Fatal(err)
	}
	if n := b.gw.ForgetKeys(); n == 0 {
		t.Fatal("the gateway had no key to forget")
	}
	waitChargeLockExpired(t, b, o)

	resp, err := pay(b.svc, o, "k2", "")
	if err != nil {
		t.Fatalf("k2: %v", err)
	}
	mustBeAlreadyPaid(t, resp)
	if n := len(b.charges(o)); n != 1 {
		t.Fatalf("gateway charges = %d, want 1: the paid order was charged again", n)
	}
	if n := b.gatewayCalls(o); n != 1 {
		t.Fatalf("gateway calls = %d, want 1 (the lost one): a paid order went back to the gateway", n)
	}
}

// A refusal, then the order is paid another way (a charge made elsewhere,
// whose webhook paid it): a new key must not start the next attempt.
func TestPaidOrderAfterARefusalIsNotCharged(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	o := b.newOrder(t, "cust-refused-then-paid")
	b.control(t, fakes.GatewayControl{FailNext: 1, FailStatus: http.StatusPaymentRequired})
	mustRefuse(t, b.svc, o, "k1", http.StatusPaymentRequired)
	if _, _, err := order.MarkPaid(context.Background(), queries.New(b.pool), o.ID, "webhook:evt_elsewhere"); err != nil {
		t.Fatal(err)
	}
	resp, err := pay(b.svc, o, "k2", "")
	if err != nil {
		t.Fatalf("k2: %v", err)
	}
	mustBeAlreadyPaid(t, resp)
	if n := b.gatewayCalls(o); n != 1 {
		t.Fatalf("gateway calls = %d, want 1 (the refused one)", n)
	}
}

// A refunded order (here refunded before it was ever paid: the provider's
// events came out of order) is answered "refunded", not "already paid", and
// is not charged.
func TestRefundedOrderIsNotCharged(t *testing.T) {
	t.Parallel()
	b := setup(t, payment.Config{})
	o := b.newOrder(t, "cust-refunded-unpaid")
	if _, _, err := order.MarkRefunded(context.Background(), queries.New(b.pool), o.ID, "webhook:evt_refund"); err != nil {
		t.Fatal(err)
	}
	resp, err := pay(b.svc, o, "k1", "")
	if err != nil {
		t.Fatalf("k1: %v", err)
	}
	if resp.Status != http.StatusConflict || !strings.Contains(string(resp.Body), "Order refunded") {
		t.Fatalf("answer = %d %s, want 409 Order refunded", resp.Status, resp.Body)
	}
	if n := b.gatewayCalls(o); n != 0 {
		t.Fatalf("gateway calls = %d, want 0", n)
	}
}

// lostAnswer makes a new order whose first payment (key k1) charged at the
// gateway while our client gave up: the order stays pending and its charge
// row "charging" until the lease ends.
func lostAnswer(t *testing.T, b *bundle, customer string) queries.Order {
	t.Helper()
	o := b.newOrder(t, customer)
	b.control(t, fakes.GatewayControl{DelayMS: 400})
	impatient := payment.NewService(b.pool, payment.NewGatewayClient(b.url, &http.Client{Timeout: 100 * time.Millisecond}), b.cfg)
	if _, err := pay(impatient, o, "k1", ""); !errors.Is(err, payment.ErrGatewayUnavailable) {
		t.Fatalf("first call: err = %v, want ErrGatewayUnavailable (timed out)", err)
	}
	waitFor(t, func() bool { return len(b.charges(o)) == 1 })
	b.control(t, fakes.GatewayControl{})
	return o
}

// waitChargeLockExpired sleeps until the order's charge lock has expired on
// the database's clock (a released lock has expired already).
func waitChargeLockExpired(t *testing.T, b *bundle, o queries.Order) {
	t.Helper()
	ch := b.chargeRow(t, o)
	if ch.State != "charging" || ch.LockedUntil == nil {
		t.Fatalf("order's charge is %s, locked until %v: want charging, locked", ch.State, ch.LockedUntil)
	}
	time.Sleep(time.Duration(ch.LockLeftMs) * time.Millisecond)
	waitFor(t, func() bool { return !b.chargeRow(t, o).Held })
}
