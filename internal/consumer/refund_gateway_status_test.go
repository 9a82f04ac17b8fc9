package consumer_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A gateway that rate limits a refund (429) is saying "not now", not "no":
// the delivery fails with an error the router retries, never one it
// poisons, and the redelivery, with the same key, refunds the order once.
// Taking the 429 for a refusal parks the refund in the poison queue and the
// customer's money stays with the merchant until an operator notices.
func TestRefundRateLimitedByTheGatewayIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.paidOrder(t)
	request := refundRequested(t, o)
	if err := b.gateway.SetControl(fakes.GatewayControl{FailNext: 1, FailStatus: http.StatusTooManyRequests}); err != nil {
		t.Fatal(err)
	}

	err := deliver(b.c.HandleRefundRequested, request)
	if err == nil || consumer.IsPermanent(err) {
		t.Fatalf("refund_requested against a 429: %v (permanent %v), want an error the router retries", err, consumer.IsPermanent(err))
	}
	if left := b.gateway.Control().FailNext; left != 0 {
		t.Fatalf("the gateway still had %d 429s to give: the test did not exercise it", left)
	}
	if err := deliver(b.c.HandleRefundRequested, request); err != nil {
		t.Fatalf("refund_requested redelivered: %v", err)
	}

	refunds := b.gateway.Refunds()
	if len(refunds) != 1 || refunds[0].IdempotencyKey != payment.RefundKey(o.ID) {
		t.Errorf("gateway refunds %+v, want one under the order's key %q", refunds, payment.RefundKey(o.ID))
	}
	if got := b.status(t, o); got != order.StatusRefunded {
		t.Errorf("status %s, want refunded", got)
	}
	if a := b.audit(t, o.ID); a.Refunded != 1 {
		t.Errorf("refunded %d, want 1", a.Refunded)
	}
}

// A refund the gateway made already, under another key (the merchant
// refunded it in the provider's dashboard; asked for again, the gateway
// answers 409): the money is back, so the refund is already applied, not a
// failure. The
// delivery succeeds, the order moves to refunded once, and the gateway holds
// the one refund the dashboard made. Taking the 409 for a refusal poisons a
// refund that has in fact happened and leaves the order paid.
func TestRefundAlreadyMadeAtTheGatewayIsAlreadyApplied(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.paidOrder(t)
	ctx := context.Background()
	chargeID, err := b.q.OrderChargeID(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	dashboard, err := payment.NewGatewayClient(b.gwURL, nil).Refund(ctx, "dashboard-refund",
		payment.RefundRequest{ChargeID: chargeID, AmountCents: o.AmountCents})
	if err != nil || dashboard.Status != http.StatusCreated {
		t.Fatalf("refund in the dashboard: %d %s, %v", dashboard.Status, dashboard.Body, err)
	}

	request := refundRequested(t, o)
	for i := range 2 {
		if err := deliver(b.c.HandleRefundRequested, request); err != nil {
			t.Fatalf("refund_requested delivery %d: %v (permanent %v), want the refund already applied",
				i+1, err, consumer.IsPermanent(err))
		}
	}

	if refunds := b.gateway.Refunds(); len(refunds) != 1 {
		t.Errorf("the gateway made %d refunds, want the dashboard's 1: %+v", len(refunds), refunds)
	}
	// The consumer asks the gateway for the order's refunds before asking
	// for one (askThenRefund): it finds the dashboard's and records it as a
	// replay; the redelivery finds the order refunded and calls no one.
	if n := b.count(t, "SELECT count(*) FROM gateway_refund_calls WHERE replayed AND refund_id IS NOT NULL"); n != 1 {
		t.Errorf("%d refund answers found at the gateway recorded, want 1 (the redelivery finds the order refunded and calls no one)", n)
	}
	if got := b.status(t, o); got != order.StatusRefunded {
		t.Errorf("status %s, want refunded", got)
	}
	if a := b.audit(t, o.ID); a.Refunded != 1 {
		t.Errorf("refunded %d, want 1", a.Refunded)
	}
}

// paidOrder returns an order charged at the fake gateway and marked paid by
// its order_paid, ready to be refunded.
func (b *bundle) paidOrder(t *testing.T) queries.Order {
	t.Helper()
	o := b.newOrder(t)
	b.pay(t, o)
	if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_paid")); err != nil {
		t.Fatalf("order_paid: %v", err)
	}
	if got := b.status(t, o); got != order.StatusPaid {
		t.Fatalf("status %s after order_paid, want paid", got)
	}
	return o
}

// refundRequested builds the refund_requested the refund API writes for o.
func refundRequested(t *testing.T, o queries.Order) *message.Message {
	t.Helper()
	msg, err := messages.NewRefundRequested(messages.RefundRequested{OrderID: o.ID, Reason: messages.ReasonCustomerRequest})
	if err != nil {
		t.Fatal(err)
	}
	return msg
}
