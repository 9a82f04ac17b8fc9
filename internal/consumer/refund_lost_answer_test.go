package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/refund"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// A charge whose answer died with the api is still refunded. The api is
// killed between the gateway's answer and storing it (the service's record
// of its gateway calls holds nothing); the provider's signed payment.succeeded
// pays the order and records its charge (webhook.RecordCharge); the customer
// asks for a refund, and the refund consumer names that charge at the
// gateway. With the charge record off, the event's charge id is dropped and
// the refund can only be poisoned: the money never goes back.
func TestRefundOfAChargeWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		off     *switches.Set
		guarded bool
	}{
		{"guarded", nil, true},
		{"without the charge record", switches.Without(effect.GuardChargeRecord), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, tc.off)
			o := b.newOrder(t)

			crash := fault.New(nil)
			crash.Arm(payment.FaultAfterGatewayCall, fault.Fail, 1)
			api := switches.Payments(payment.NewService(b.pool, payment.NewGatewayClient(b.gwURL, nil), payment.Config{}).
				WithFaults(crash), tc.off)
			if _, err := api.Pay(ctx, payment.Request{OrderID: o.ID, Key: "pay-1"}); !errors.Is(err, fault.ErrInjected) {
				t.Fatalf("pay: %v, want the api killed after the gateway's answer", err)
			}
			charges := b.gateway.Charges()
			if len(charges) != 1 {
				t.Fatalf("gateway charges = %d, want 1", len(charges))
			}

			secret := []byte("a-test-secret-of-at-least-32-bytes!!")
			body := fmt.Appendf(nil, `{"id":"evt_lost_answer","type":"payment.succeeded","data":{"order_id":%q,"amount_cents":%d,"charge_id":%q}}`,
				o.ID, o.AmountCents, charges[0].ID)
			in := switches.Ingestor(webhook.NewIngestor(b.pool, secret), tc.off)
			if _, err := in.Ingest(ctx, webhook.Sign(secret, time.Now(), body), body); err != nil {
				t.Fatalf("ingest payment.succeeded: %v", err)
			}
			if err := deliver(b.c.HandleOrderPaid, b.outboxMessage(t, o, messages.TopicOrderPaid)); err != nil {
				t.Fatalf("order_paid: %v", err)
			}
			if _, err := refund.Request(ctx, b.pool, o.ID, "refund-1", nil); err != nil {
				t.Fatalf("request the refund: %v", err)
			}
			err := deliver(b.c.HandleRefundRequested, b.outboxMessage(t, o, messages.TopicRefundRequested))
			refunds := b.gateway.Refunds()

			if !tc.guarded {
				if !consumer.IsPermanent(err) || len(refunds) != 0 {
					t.Fatalf("refund_requested: %v, %d refunds; want it poisoned, nothing refunded (the damage)", err, len(refunds))
				}
				return
			}
			if err != nil {
				t.Fatalf("refund_requested: %v", err)
			}
			if len(refunds) != 1 || refunds[0].ChargeID != charges[0].ID {
				t.Fatalf("gateway refunds = %+v, want one of charge %s", refunds, charges[0].ID)
			}
			if a := b.audit(t, o.ID); a.Charges != 1 {
				t.Fatalf("audit charges = %d, want 1 (recorded by the event)", a.Charges)
			}
		})
	}
}
