package scenario

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// The api's call to the gateway ends without the answer stored: the money
// moved, and only the provider's webhook says so. What the service must do
// next is protect the charge, not the request: never charge the paid order
// again, and still be able to refund it.

// faultAfterGatewayCall is payment.FaultAfterGatewayCall.
const faultAfterGatewayCall = "payment.after_gateway_call"

func gatewayForgotKey() *Scenario {
	return &Scenario{
		Name: "gateway-forgot-key",
		Summary: "the api is SIGKILLed between the gateway's answer and storing it, the webhook pays the order, " +
			"the gateway forgets its idempotency keys (real ones do, after about a day), and the client pays again with a new key",
		Repeated:  "POST /payments after the gateway forgot the key",
		Protected: Expect{Checks: once(1)},
		Without: map[string]Expect{
			effect.GuardChargeClaim: {
				Damage: "the customer was charged twice: the paid order went back to the gateway, which no longer knew its key",
				Checks: once(1, eq(Charges, 2)),
			},
		},
		Run: func(ctx context.Context, s *Stage) error {
			id, err := answerLost(ctx, s)
			if err != nil {
				return err
			}
			if err := s.ForgetGatewayKeys(ctx); err != nil {
				return err
			}
			status, title, err := s.PayTitle(ctx, id, "pay-"+id.String()+"-again", 10*time.Second)
			s.Logf("payment with a new key: status %d %s, err %v", status, title, err)
			return err
		},
	}
}

func chargeAnswerLost() *Scenario {
	return &Scenario{
		Name: "charge-answer-lost",
		Summary: "the api is SIGKILLed between the gateway's answer and storing it; the webhook pays the order, " +
			"and then the customer asks for a refund",
		Repeated: "the charge's answer lost, only its webhook arrives",
		Protected: Expect{Checks: with(once(1),
			eq(Refunds, 1), eq(Refunded, 1), eq(Reversed, 1), eq(RefundNotices, 1))},
		Without: map[string]Expect{
			effect.GuardChargeRecord: {
				Damage: "the refund was never made: the service knew no charge to name, the refund request was poisoned " +
					"and the customer keeps paying for an order given back",
				Checks: with(once(1), eq(Refunds, 0), eq(Refunded, 0), eq(Reversed, 0), eq(RefundNotices, 0)),
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderConfirmed >= 1 },
		Run: func(ctx context.Context, s *Stage) error {
			id, err := answerLost(ctx, s)
			if err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the order confirmed", 30*time.Second, func(c Counts) bool { return c.Delivered >= 1 }); err != nil {
				return err
			}
			if err := s.CustomerRefund(ctx, id, "refund-"+id.String()); err != nil {
				return err
			}
			return s.waitRefundSettled(ctx)
		},
	}
}

// answerLost is the start of both: fakes, an api that dies right after the
// gateway's answer (payment.after_gateway_call=crash:1) and a worker; a new
// order paid once, the client left with no answer; then a new api, to which
// the gateway's webhook, retried, gets through and pays the order.
func answerLost(ctx context.Context, s *Stage) (uuid.UUID, error) {
	if err := s.StartFakes(ctx); err != nil {
		return uuid.Nil, err
	}
	api, err := s.start(ctx, "api", nil, "api listening on ", append(s.guardArgs("api"), "--faults", faultAfterGatewayCall+"=crash:1"))
	if err != nil {
		return uuid.Nil, err
	}
	if _, err := s.StartWorker(ctx, nil); err != nil {
		return uuid.Nil, err
	}
	id, err := s.NewOrder(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	status, err := s.Pay(ctx, id, "pay-"+id.String(), 10*time.Second)
	s.Logf("payment: status %d, err %v", status, err)
	if err == nil {
		return uuid.Nil, fmt.Errorf("the payment answered %d; the api was to die after the gateway's answer", status)
	}
	if err := api.WaitExit(ctx, 10*time.Second); err != nil {
		return uuid.Nil, err
	}
	s.Logf("the api died between the gateway's answer and storing it")
	if err := s.StartAPI(ctx); err != nil {
		return uuid.Nil, err
	}
	c, err := s.WaitFor(ctx, "the order paid by the gateway's webhook", 60*time.Second, func(c Counts) bool { return c.Paid >= 1 })
	if err == nil && c.Charges != 1 {
		err = fmt.Errorf("the gateway made %d charges for the first payment, want 1", c.Charges)
	}
	return id, err
}

// ForgetGatewayKeys makes the fake gateway forget every Idempotency-Key it
// has seen (POST /control/gateway/forget-keys); the charges stay made.
func (s *Stage) ForgetGatewayKeys(ctx context.Context) error {
	var out struct {
		Forgotten int `json:"forgotten"`
	}
	status, err := s.call(ctx, "POST", s.FakesURL()+"/control/gateway/forget-keys", nil, nil, &out)
	if err == nil && status != http.StatusOK {
		err = errors.New("POST /control/gateway/forget-keys: status " + fmt.Sprint(status))
	}
	s.Logf("the gateway forgot %d idempotency keys", out.Forgotten)
	return err
}

// HoldWebhooks makes the fake gateway hold its webhooks (hold true) or let
// them go (POST /control/gateway, which replaces every other setting).
func (s *Stage) HoldWebhooks(ctx context.Context, hold bool) error {
	s.Logf("gateway webhooks held: %v", hold)
	return s.must(ctx, "POST", s.FakesURL()+"/control/gateway", map[string]bool{"hold_webhooks": hold}, nil)
}

// SearchLag makes both fakes' look-ups by order leave out what was made in
// the last lag (POST /control/search-lag): a provider whose search has not
// caught up.
func (s *Stage) SearchLag(ctx context.Context, lag time.Duration) error {
	s.Logf("the providers' search lags %s", lag)
	return s.must(ctx, "POST", s.FakesURL()+"/control/search-lag", map[string]int{"seconds": int(lag.Seconds())}, nil)
}

// ForgetProviderKeys makes the fake notification provider forget every
// Idempotency-Key it has seen (the e-mails stay sent).
func (s *Stage) ForgetProviderKeys(ctx context.Context) error {
	status, err := s.call(ctx, "POST", s.FakesURL()+"/control/notifications/forget-keys", nil, nil, nil)
	if err == nil && status != http.StatusOK {
		err = errors.New("POST /control/notifications/forget-keys: status " + fmt.Sprint(status))
	}
	s.Logf("the notification provider forgot its idempotency keys")
	return err
}

// waitRefundSettled waits until the refund has run its course: made and
// its notice sent, or its request in the poison queue.
func (s *Stage) waitRefundSettled(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := s.Observe(ctx)
		if err != nil {
			return err
		}
		poisoned, err := s.q.PoisonCountPending(ctx)
		if err != nil {
			return fmt.Errorf("count the poison queue: %w", err)
		}
		switch {
		case c.Refunds >= 1 && c.RefundNotices >= 1:
			s.Logf("the refund was made and the customer told")
			return nil
		case poisoned > 0:
			s.Logf("the refund request is in the poison queue: no charge of the order is recorded")
			return nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return errors.New("the refund was neither made nor poisoned within 30s")
}

func chargeSentBlind() *Scenario {
	return &Scenario{
		Name: "charge-sent-blind",
		Summary: "the gateway answers after the api's client gave up (502, the money moved), the webhook is refused " +
			"(the api's secret was rotated), the gateway forgets its idempotency keys, and the client pays again with a new key",
		Repeated:  "POST /payments after an answer lost, the webhook late and the key forgotten",
		Protected: Expect{Checks: once(1)},
		Without: map[string]Expect{
			effect.GuardAskFirst: {
				Damage: "the customer was charged twice: the attempt whose outcome was unknown was sent again blind, " +
					"and the gateway no longer knew its key",
				Checks: once(1, eq(Charges, 2)),
			},
		},
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.StartFakes(ctx); err != nil {
				return err
			}
			// Webhooks signed with the fakes' secret get 401 from this api:
			// the gateway keeps retrying them (a late webhook).
			rotated, err := s.start(ctx, "api", map[string]string{"WEBHOOK_SECRET": "a-rotated-secret-the-gateway-does-not-know"},
				"api listening on ", s.guardArgs("api"))
			if err != nil {
				return err
			}
			if _, err := s.StartWorker(ctx, nil); err != nil {
				return err
			}
			id, err := s.NewOrder(ctx)
			if err != nil {
				return err
			}
			// The api's gateway client gives up after 10s; the gateway
			// charges at once and answers after 10.5s.
			if err := s.GatewayControl(ctx, map[string]int{"delay_ms": 10500}); err != nil {
				return err
			}
			status, title, err := s.PayTitle(ctx, id, "pay-"+id.String(), 30*time.Second)
			s.Logf("payment: status %d %s, err %v", status, title, err)
			if err != nil || status != http.StatusBadGateway {
				return fmt.Errorf("the first payment answered %d (%v); want 502, its answer lost", status, err)
			}
			if err := s.GatewayControl(ctx, map[string]int{}); err != nil {
				return err
			}
			if err := s.ForgetGatewayKeys(ctx); err != nil {
				return err
			}
			status, title, err = s.PayTitle(ctx, id, "pay-"+id.String()+"-again", 10*time.Second)
			s.Logf("payment with a new key: status %d %s, err %v", status, title, err)
			if err != nil {
				return err
			}
			// The secret is put back: the gateway's retried webhooks get
			// through and pay the order.
			if err := rotated.Kill(); err != nil {
				return err
			}
			return s.StartAPI(ctx)
		},
	}
}
