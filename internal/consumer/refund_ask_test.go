package consumer_test

import (
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/order"
)

// TestRefundIsNotSentWhileTheGatewayCannotSay: the consumer asks the
// gateway for the order's refunds before asking for one; while the gateway
// cannot say (its search answers 503) nothing is sent and the delivery
// fails, to be retried; once it can, the refund is made once.
func TestRefundIsNotSentWhileTheGatewayCannotSay(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.paidOrder(t)
	if err := b.gateway.SetControl(fakes.GatewayControl{LookupFailNext: 1}); err != nil {
		t.Fatal(err)
	}
	request := refundRequested(t, o)
	if err := deliver(b.c.HandleRefundRequested, request); err == nil {
		t.Fatal("refund_requested while the gateway cannot say succeeded; want an error, to be retried")
	}
	if n := len(b.gateway.Refunds()); n != 0 {
		t.Fatalf("the gateway made %d refunds while it could not say what it had done, want 0", n)
	}
	if err := deliver(b.c.HandleRefundRequested, request); err != nil {
		t.Fatalf("refund_requested once the gateway can say: %v", err)
	}
	if n := len(b.gateway.Refunds()); n != 1 {
		t.Fatalf("the gateway made %d refunds, want 1", n)
	}
	if got := b.status(t, o); got != order.StatusRefunded {
		t.Fatalf("status %s, want refunded", got)
	}
}
