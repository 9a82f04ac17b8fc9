package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// The public edge repeats itself: a client retries, a provider redelivers its
// webhook, or sends two events for one payment.

func clientRetry() *Scenario {
	return &Scenario{
		Name: "client-retry",
		Summary: "the gateway is slow, the client times out and retries POST /orders/{id}/payments " +
			"with the same Idempotency-Key until it gets an answer",
		Repeated:  "POST /payments after a client timeout",
		Protected: Expect{Checks: once(1)},
		Without: map[string]Expect{
			effect.GuardIdempotencyKey: {
				Damage: "the customer was charged twice (the order itself stays paid once)",
				Checks: once(1, eq(Charges, 2)),
			},
		},
		Run: func(ctx context.Context, s *Stage) error {
			id, err := timedOutPayment(ctx, s, func(id uuid.UUID) string { return "pay-" + id.String() })
			if err != nil {
				return err
			}
			key := "pay-" + id.String()
			for attempt := 2; attempt <= 20; attempt++ {
				if err := sleep(ctx, 250*time.Millisecond); err != nil {
					return err
				}
				status, title, err := s.PayTitle(ctx, id, key, 3*time.Second)
				s.Logf("attempt %d: status %d %s, err %v", attempt, status, title, err)
				// Done when charged, or told the order is already paid: the
				// gateway's webhook may pay the order before the retry comes,
				// and a paid order is not sent to the gateway again.
				if err == nil && (status/100 == 2 || title == "Order already paid") {
					return nil
				}
			}
			return fmt.Errorf("no 2xx or already-paid answer to POST /orders/%s/payments in 20 attempts", id)
		},
	}
}

func newKeyPerRetry() *Scenario {
	return &Scenario{
		Name: "new-key-per-retry",
		Summary: "the gateway is slow, the client times out and retries POST /orders/{id}/payments " +
			"with a NEW Idempotency-Key each time (a second tab, an app that lost its key)",
		Repeated:  "POST /payments, a new key per retry",
		Protected: Expect{Checks: once(1)},
		Without: map[string]Expect{
			effect.GuardChargeClaim: {
				Damage: "the customer was charged twice: each new key charged under a gateway key of its own",
				Checks: once(1, eq(Charges, 2)),
			},
		},
		Run: func(ctx context.Context, s *Stage) error {
			id, err := timedOutPayment(ctx, s, func(id uuid.UUID) string { return "pay-" + id.String() + "-1" })
			if err != nil {
				return err
			}
			for attempt := 2; attempt <= 20; attempt++ {
				if err := sleep(ctx, 250*time.Millisecond); err != nil {
					return err
				}
				key := fmt.Sprintf("pay-%s-%d", id, attempt)
				status, title, err := s.PayTitle(ctx, id, key, 3*time.Second)
				s.Logf("attempt %d, key %s: status %d %s, err %v", attempt, key, status, title, err)
				// Done when charged, or told the order is already paid; a 409
				// "in flight" means the first charge is still at the gateway.
				if err == nil && (status/100 == 2 || title == "Order already paid") {
					return nil
				}
			}
			return fmt.Errorf("no 2xx or already-paid answer to POST /orders/%s/payments in 20 attempts", id)
		},
	}
}

// timedOutPayment is the start of the client-retry scenarios: the usual
// three processes, a new order, and a first POST /payments under key(order)
// that the client gives up on after 300ms while the slow gateway charges.
// When it returns, the money has moved although the client saw nothing, and
// the gateway is fast again for the retries.
func timedOutPayment(ctx context.Context, s *Stage, key func(uuid.UUID) string) (uuid.UUID, error) {
	if err := s.Start(ctx); err != nil {
		return uuid.Nil, err
	}
	id, err := s.NewOrder(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	if err := s.GatewayControl(ctx, map[string]int{"delay_ms": 1500}); err != nil {
		return uuid.Nil, err
	}
	status, err := s.Pay(ctx, id, key(id), 300*time.Millisecond)
	s.Logf("attempt 1: status %d, err %v", status, err)
	if err == nil {
		return uuid.Nil, fmt.Errorf("the first payment answered %d within the client's 300ms; the slow gateway did not hold it", status)
	}
	if _, err := s.WaitFor(ctx, "the slow charge made", 10*time.Second, func(c Counts) bool { return c.Charges >= 1 }); err != nil {
		return uuid.Nil, err
	}
	return id, s.GatewayControl(ctx, map[string]int{})
}

func webhookRedelivered() *Scenario {
	return &Scenario{
		Name:      "webhook-redelivered",
		Summary:   "the gateway delivers its payment.succeeded webhook four times, one after the other, with one event id",
		Repeated:  "webhook x4, same event id",
		Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 1))},
		Without: map[string]Expect{
			effect.GuardWebhookInbox: {
				Damage: "four order_paid for one event (the consumers' guards still hold the effects)",
				Checks: once(1, eq(ExecOrderPaid, 4)),
			},
		},
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.Start(ctx); err != nil {
				return err
			}
			if err := s.GatewayControl(ctx, map[string]int{"duplicate_webhooks": 3}); err != nil {
				return err
			}
			_, _, err := s.PaidOrder(ctx)
			return err
		},
	}
}

func webhookConcurrent() *Scenario {
	return &Scenario{
		Name:      "webhook-concurrent",
		Summary:   "the gateway delivers the same webhook five more times, all at the same moment",
		Repeated:  "webhook x5 at once, same event id",
		Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 1))},
		Without: map[string]Expect{
			effect.GuardWebhookInbox: {
				Damage: "six order_paid for one event (the consumers' guards still hold the effects)",
				Checks: once(1, eq(ExecOrderPaid, 6)),
			},
		},
		Run: func(ctx context.Context, s *Stage) error {
			charge, err := payAndWait(ctx, s)
			if err != nil {
				return err
			}
			return s.Redeliver(ctx, charge, 5, true, false)
		},
	}
}

func twoEvents() *Scenario {
	return &Scenario{
		Name:      "two-events",
		Summary:   "the provider sends a second, different event (new id) for the same payment",
		Repeated:  "2 provider events, 1 payment",
		Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 2))},
		Without: map[string]Expect{
			effect.GuardLedgerKey: {
				Damage: "double commission: the ledger key came from the delivery, not the intent",
				Checks: once(1, eq(ExecOrderPaid, 2), eq(Commission, 2)),
			},
			effect.GuardStateCheck: doubleTransition(2, 2, eq(ExecOrderPaid, 2)),
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 2 && c.ExecOrderConfirmed >= 1 },
		Run: func(ctx context.Context, s *Stage) error {
			charge, err := payAndWait(ctx, s)
			if err != nil {
				return err
			}
			return s.Redeliver(ctx, charge, 1, false, true)
		},
	}
}
