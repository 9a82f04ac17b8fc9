package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/ops/reconcile"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Refunds and compensations: the opposite of an effect is an effect too,
// with a guard of its own, and events come in any order.

// faultAfterGatewayRefund is consumer.FaultAfterGatewayRefund.
const faultAfterGatewayRefund = "refund_requested.after_gateway_refund"

// refundOnce expects every effect of one paid order once, its refund
// applied once too: one refund at the gateway, the order refunded, its
// stock back, its commission reversed, the customer told of each.
func refundOnce(extra ...Check) []Check {
	return with(once(1,
		eq(StockReserved, 1), eq(Refunds, 1), eq(Refunded, 1), eq(StockReleased, 1),
		eq(Reversed, 1), eq(RefundNotices, 1)), extra...)
}

// refundedOrder runs the usual processes and one order of 2 units of sku-1
// (10 in stock) through payment, confirmation and a customer's refund, to
// the end. It returns the order, its charge and its refund at the gateway.
func refundedOrder(ctx context.Context, s *Stage, workerArgs ...string) (id uuid.UUID, charge, refund string, err error) {
	if err := s.Start(ctx, workerArgs...); err != nil {
		return uuid.Nil, "", "", err
	}
	if err := s.SetStock(ctx, "sku-1", 10); err != nil {
		return uuid.Nil, "", "", err
	}
	if id, charge, err = s.PaidOrder(ctx, map[string]any{"sku": "sku-1", "quantity": 2}); err != nil {
		return uuid.Nil, "", "", err
	}
	if _, err := s.WaitFor(ctx, "the order confirmed", 30*time.Second, func(c Counts) bool { return c.Delivered >= 1 }); err != nil {
		return uuid.Nil, "", "", err
	}
	if err := s.CustomerRefund(ctx, id, "refund-"+id.String()); err != nil {
		return uuid.Nil, "", "", err
	}
	if _, err := s.WaitFor(ctx, "the refund applied and its webhook handled", 30*time.Second, func(c Counts) bool {
		return c.Refunds >= 1 && c.Refunded >= 1 && c.ExecOrderRefunded >= 1
	}); err != nil {
		return uuid.Nil, "", "", err
	}
	refund, err = s.RefundOf(ctx, id)
	return id, charge, refund, err
}

func refundRedelivered() *Scenario {
	return &Scenario{
		Name: "refund-redelivered",
		Summary: "a paid order (2 units, an affiliate) is refunded at the customer's request; the provider sends " +
			"its payment.refunded webhook, then three more events for the same refund (new event ids: the webhook inbox lets them through)",
		Repeated:  "payment.refunded x4 after our own refund",
		Protected: Expect{Checks: refundOnce()},
		Without: map[string]Expect{
			effect.GuardStateCheck: {
				Damage: "the order was \"refunded\" again by every delivery (the customer's notice was absorbed by the inbox)",
				Checks: refundOnce(atLeast(Refunded, 3)),
			},
			effect.GuardStockReservation: {
				Damage: "every delivery gave the 2 units back again: the stock shows units that do not exist",
				Checks: refundOnce(atLeast(StockReleased, 2)),
			},
			effect.GuardLedgerKey: {
				Damage: "the commission was reversed again by every new message (our refund, then each provider event): the affiliate owes it",
				Checks: refundOnce(atLeast(Reversed, 2)),
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderRefunded >= 4 && c.RefundNotices >= 1 },
		Run: func(ctx context.Context, s *Stage) error {
			_, _, refund, err := refundedOrder(ctx, s)
			if err != nil {
				return err
			}
			return s.RedeliverRefund(ctx, refund, 3, true)
		},
	}
}

func paymentAfterRefund() *Scenario {
	return &Scenario{
		Name: "payment-after-refund",
		Summary: "a paid order (2 units, an affiliate) is refunded; then the provider redelivers its old " +
			"payment.succeeded twice, with fresh event ids",
		Repeated:  "payment.succeeded x2 after the refund",
		Protected: Expect{Checks: refundOnce(eq(ExecOrderPaid, 3))},
		Without: map[string]Expect{
			effect.GuardStateCheck: {
				Damage: "the late payments moved the refunded order back to paid: it ends paid, with its money given back",
				Checks: refundOnce(eq(ExecOrderPaid, 3), eq(Paid, 3), atLeast(Refunded, 2)),
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 3 },
		Run: func(ctx context.Context, s *Stage) error {
			id, charge, _, err := refundedOrder(ctx, s)
			if err != nil {
				return err
			}
			if err := s.Redeliver(ctx, charge, 2, false, true); err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the late payments handled", 30*time.Second, func(c Counts) bool { return c.ExecOrderPaid >= 3 }); err != nil {
				return err
			}
			return s.logStatus(ctx, id)
		},
	}
}

// refusedOnce expects one paid, fulfilled and confirmed order whose refund
// the gateway refused for good: nothing given back, nothing compensated
// (its stock stays reserved, its commission credited), the refusal
// recorded: the order refund_failed once, its refund_requested in the
// poison queue.
func refusedOnce(extra ...Check) []Check {
	return with(once(1,
		eq(StockReserved, 1), eq(Refunds, 0), eq(Refunded, 0), eq(StockReleased, 0), eq(Reversed, 0), eq(RefundNotices, 0),
		eq(ExecOrderPaid, 2), eq(ExecRefundRequested, 2), eq(RefundFailed, 1), eq(Refusals, 1), eq(Poisoned, 1)), extra...)
}

func refundRefused() *Scenario {
	return &Scenario{
		Name: "refund-refused",
		Summary: "a paid order (2 units, an affiliate) is refunded at the customer's request and the gateway refuses " +
			"for good (402); the provider then redelivers its payment.succeeded, and an operator replays the poison queue",
		Repeated: "payment.succeeded, refund_requested replayed",
		Protected: Expect{
			Checks: refusedOnce(),
			Note: "the refusal recorded once: the order ends refund_failed, its refund_requested in the poison queue with " +
				"the gateway's 402, the gateway asked once for two deliveries, nothing given back or reversed",
		},
		Without: map[string]Expect{
			effect.GuardStateCheck: {
				Damage: "the late payment moved the refund_failed order back to paid, hiding the refusal, and the replay asked " +
					"the gateway again (refused again)",
				Checks: refusedOnce(eq(Paid, 2), eq(RefundFailed, 2), eq(Refusals, 2)),
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 2 && c.ExecRefundRequested >= 2 && c.Poisoned >= 1 },
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.Start(ctx); err != nil {
				return err
			}
			if err := s.SetStock(ctx, "sku-1", 10); err != nil {
				return err
			}
			id, charge, err := s.PaidOrder(ctx, map[string]any{"sku": "sku-1", "quantity": 2})
			if err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the order confirmed", 30*time.Second, func(c Counts) bool { return c.Delivered >= 1 }); err != nil {
				return err
			}
			if err := s.RefuseRefunds(ctx, id); err != nil {
				return err
			}
			if err := s.CustomerRefund(ctx, id, "refund-"+id.String()); err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the refusal recorded and poisoned", 30*time.Second, func(c Counts) bool {
				return c.RefundFailed >= 1 && c.Poisoned >= 1
			}); err != nil {
				return err
			}
			if err := s.wantPoisonReason(ctx, id); err != nil {
				return err
			}
			if err := s.Redeliver(ctx, charge, 1, false, true); err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the late payment handled", 30*time.Second, func(c Counts) bool { return c.ExecOrderPaid >= 2 }); err != nil {
				return err
			}
			if _, err := s.Command(ctx, "reprocess", "--poison"); err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the replayed refund_requested poisoned again", 30*time.Second, func(c Counts) bool {
				return c.ExecRefundRequested >= 2 && c.Poisoned >= 1
			}); err != nil {
				return err
			}
			if err := s.wantPoisonReason(ctx, id); err != nil {
				return err
			}
			// The last line of defence lists it for a person: reconcile
			// settles nothing and exits 1 while the refund is owed.
			out, err := s.Command(ctx, append(s.guardArgs("reconcile"), "--grace", "1s")...)
			if s.without == "" && (err == nil || !strings.Contains(out, string(reconcile.RefundFailed))) {
				return fmt.Errorf("reconcile did not list the refused refund for a person (err %v)", err)
			}
			return s.logStatus(ctx, id)
		},
	}
}

// RefuseRefunds tells the fake gateway to refuse every refund of the order
// for good, with its default 402 (refuse_refunds_of).
func (s *Stage) RefuseRefunds(ctx context.Context, id uuid.UUID) error {
	s.Logf("gateway control: refuse the refunds of order %s", id)
	return s.must(ctx, "POST", s.FakesURL()+"/control/gateway", map[string]any{"refuse_refunds_of": id.String()}, nil)
}

// refusal is a refund the fake gateway refused for good (GET
// /refund-refusals).
type refusal struct {
	OrderID string `json:"order_id"`
}

// poisoned returns the reasons of the poison queue's pending messages that
// name a tracked order (their order_id metadata), by order.
func (s *Stage) poisoned(ctx context.Context, tracked map[string]bool) (map[string][]string, error) {
	pending, err := s.q.PoisonListPending(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the poison queue: %w", err)
	}
	out := map[string][]string{}
	for _, p := range pending {
		var meta map[string]string
		if err := json.Unmarshal(p.Metadata, &meta); err != nil {
			return nil, fmt.Errorf("decode the metadata of poison message %d: %w", p.ID, err)
		}
		if id := meta[messages.MetadataOrderID]; tracked[id] {
			out[id] = append(out[id], p.Reason)
		}
	}
	return out, nil
}

// observeRefusals adds to c the refunds the fake gateway refused for good
// (Refusals) and the poison queue's pending messages (Poisoned) of the
// tracked orders.
func (s *Stage) observeRefusals(ctx context.Context, c *Counts, tracked map[string]bool) error {
	var refused []refusal
	if err := s.must(ctx, "GET", s.FakesURL()+"/refund-refusals", nil, &refused); err != nil {
		return err
	}
	for _, r := range refused {
		if tracked[r.OrderID] {
			c.Refusals++
		}
	}
	poisoned, err := s.poisoned(ctx, tracked)
	if err != nil {
		return err
	}
	for _, reasons := range poisoned {
		c.Poisoned += int64(len(reasons))
	}
	return nil
}

// wantPoisonReason fails unless the poison queue holds a pending message of
// the order whose reason names the gateway's refusal: its 402 and its words.
func (s *Stage) wantPoisonReason(ctx context.Context, id uuid.UUID) error {
	poisoned, err := s.poisoned(ctx, map[string]bool{id.String(): true})
	if err != nil {
		return err
	}
	for _, reason := range poisoned[id.String()] {
		s.Logf("poisoned: %s", reason)
		if strings.Contains(reason, "402") && strings.Contains(reason, "cannot be refunded") {
			return nil
		}
	}
	return fmt.Errorf("no pending poison message of order %s names the gateway's refusal (402, \"cannot be refunded\"): %q",
		id, poisoned[id.String()])
}

func refundBeforePayment() *Scenario {
	return &Scenario{
		Name: "refund-before-payment",
		Summary: "the provider's events arrive out of order: payment.refunded first, then payment.succeeded twice, " +
			"then payment.refunded again (no charge is made here: the provider is played by signed webhooks)",
		Repeated: "payment.refunded, payment.succeeded x2, payment.refunded",
		Protected: Expect{Checks: []Check{
			eq(Paid, 0), eq(StockReserved, 0), eq(Commission, 0), eq(Enqueued, 0), eq(Notified, 0),
			eq(Refunded, 1), eq(StockReleased, 0), eq(Reversed, 0), eq(RefundNotices, 1), eq(ExecOrderPaid, 2),
		}},
		Without: map[string]Expect{
			effect.GuardStateCheck: {
				Damage: "the late payment brought the refunded order back to life: paid, stock taken, commission credited",
				Checks: []Check{atLeast(Paid, 1), atLeast(StockReserved, 1), atLeast(Commission, 1), atLeast(Refunded, 2)},
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 2 && c.ExecOrderRefunded >= 2 && c.RefundNotices >= 1 },
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.Start(ctx); err != nil {
				return err
			}
			if err := s.SetStock(ctx, "sku-1", 10); err != nil {
				return err
			}
			id, err := s.NewOrder(ctx, map[string]any{"sku": "sku-1", "quantity": 2})
			if err != nil {
				return err
			}
			steps := []struct {
				typ, event string
				wait       func(Counts) bool
			}{
				{webhook.EventPaymentRefunded, "evt_refund_" + id.String(), func(c Counts) bool { return c.ExecOrderRefunded >= 1 }},
				{webhook.EventPaymentSucceeded, "evt_pay_" + id.String(), func(c Counts) bool { return c.ExecOrderPaid >= 1 }},
				{webhook.EventPaymentSucceeded, "evt_pay2_" + id.String(), func(c Counts) bool { return c.ExecOrderPaid >= 2 }},
				{webhook.EventPaymentRefunded, "evt_refund2_" + id.String(), func(c Counts) bool { return c.ExecOrderRefunded >= 2 }},
			}
			for _, st := range steps {
				if err := s.PostWebhook(ctx, st.typ, st.event, id, 10000); err != nil {
					return err
				}
				if _, err := s.WaitFor(ctx, st.typ+" "+st.event+" handled", 30*time.Second, st.wait); err != nil {
					return err
				}
			}
			return s.logStatus(ctx, id)
		},
	}
}

func shortOrderRefunded() *Scenario {
	return &Scenario{
		Name: "short-order-refunded",
		Summary: "an order of 2 units is paid while 1 is in stock: it cannot be fulfilled and is refunded; the worker " +
			"is killed between the gateway's refund and its record, and the payment webhook is redelivered twice",
		Repeated: "refund_requested after a kill between call and record, payment.succeeded x3",
		Protected: Expect{Checks: []Check{
			eq(Charges, 1), eq(Paid, 1), eq(StockReserved, 0), eq(Commission, 0), eq(Enqueued, 0), eq(Notified, 0),
			eq(Refunds, 1), eq(Refunded, 1), eq(StockReleased, 0), eq(Reversed, 0), eq(RefundNotices, 1),
		}},
		Without: map[string]Expect{
			effect.GuardStateCheck: {
				Damage: "every payment event \"transitioned\" the order again, and every refund event refunded it again",
				Checks: []Check{eq(Refunds, 1), atLeast(Paid, 2), atLeast(Refunded, 2)},
			},
		},
		// The killed run of refund_requested wrote no execution: one means
		// its redelivery ran (on NATS, after the consumer's AckWait).
		Settled: func(c Counts) bool {
			return c.ExecOrderPaid >= 3 && c.ExecOrderRefunded >= 1 && c.ExecRefundRequested >= 1 && c.RefundNotices >= 1
		},
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.StartFakes(ctx); err != nil {
				return err
			}
			if err := s.StartAPI(ctx); err != nil {
				return err
			}
			w, err := s.StartWorker(ctx, nil, "--faults", faultAfterGatewayRefund+"=crash:1")
			if err != nil {
				return err
			}
			if err := s.SetStock(ctx, "scarce", 1); err != nil {
				return err
			}
			_, charge, err := s.PaidOrder(ctx, map[string]any{"sku": "scarce", "quantity": 2})
			if err != nil {
				return err
			}
			if err := s.waitCrashed(ctx, w); err != nil {
				return err
			}
			s.Logf("worker killed after the gateway refunded, before it recorded the answer; restarting it")
			if _, err := s.StartWorker(ctx, nil); err != nil {
				return err
			}
			if err := s.Redeliver(ctx, charge, 2, false, true); err != nil {
				return err
			}
			_, err = s.WaitFor(ctx, "the redelivered payments handled", 30*time.Second, func(c Counts) bool { return c.ExecOrderPaid >= 3 })
			return err
		},
	}
}

func lastUnitRaced() *Scenario {
	return &Scenario{
		Name:    "last-unit-raced",
		Summary: "two customers pay at the same moment for the last unit of a SKU: one order gets it, the other is refunded",
		Orders:  2,
		// Two orders paid, one of them refunded and never fulfilled.
		Repeated: "2 orders for 1 unit, at once",
		Protected: Expect{Checks: []Check{
			eq(Charges, 2), eq(Paid, 2), eq(StockReserved, 1), eq(Commission, 1), eq(Enqueued, 1),
			eq(Notified, 1), eq(Refunds, 1), eq(Refunded, 1), eq(RefundNotices, 1),
		}},
		Without: map[string]Expect{
			effect.GuardStockReservation: {
				Damage: "the last unit was sold twice: the naive counter took it for both orders (and stopped at 0), nobody was refunded",
				Checks: []Check{eq(Paid, 2), eq(StockReserved, 2), eq(Refunds, 0), eq(Refunded, 0)},
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 2 && (c.Refunded >= 1 || c.StockReserved >= 2) },
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.Start(ctx); err != nil {
				return err
			}
			if err := s.SetStock(ctx, "last", 1); err != nil {
				return err
			}
			var ids [2]uuid.UUID
			for i := range ids {
				id, err := s.NewOrder(ctx, map[string]any{"sku": "last", "quantity": 1})
				if err != nil {
					return err
				}
				ids[i] = id
			}
			var wg sync.WaitGroup
			errs := make([]error, len(ids))
			for i, id := range ids {
				wg.Go(func() {
					status, err := s.Pay(ctx, id, "pay-"+id.String(), 10*time.Second)
					if err == nil && status != http.StatusCreated {
						err = fmt.Errorf("pay order %s: status %d", id, status)
					}
					errs[i] = err
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
			c, err := s.WaitFor(ctx, "both payments handled", 30*time.Second, func(c Counts) bool { return c.ExecOrderPaid >= 2 })
			if err != nil {
				return err
			}
			left, err := s.Stock(ctx, "last")
			if err != nil {
				return err
			}
			s.Logf("last: %d left after two orders of the one unit; stock_reserved %d", left, c.StockReserved)
			return nil
		},
	}
}

// CustomerRefund sends POST /orders/{id}/refunds with key as its
// Idempotency-Key; it must answer 201.
func (s *Stage) CustomerRefund(ctx context.Context, id uuid.UUID, key string) error {
	status, err := s.call(ctx, "POST", s.APIURL()+"/orders/"+id.String()+"/refunds", map[string]string{"Idempotency-Key": key}, map[string]any{}, nil)
	if err != nil {
		return fmt.Errorf("refund order %s: %w", id, err)
	}
	if status != http.StatusCreated {
		return fmt.Errorf("refund order %s: status %d, want 201", id, status)
	}
	s.Logf("order %s: refund requested", id)
	return nil
}

// RequestRefund sends POST /orders/{id}/refunds with key as its
// Idempotency-Key and gives up after timeout, as Pay does: the status, or an
// error when no answer came back in time.
func (s *Stage) RequestRefund(ctx context.Context, id uuid.UUID, key string, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.call(ctx, "POST", s.APIURL()+"/orders/"+id.String()+"/refunds", map[string]string{"Idempotency-Key": key}, map[string]any{}, nil)
}

// RefundOf returns the id of the gateway's refund of the order.
func (s *Stage) RefundOf(ctx context.Context, id uuid.UUID) (string, error) {
	refunds, err := s.refunds(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range refunds {
		if r.OrderID == id.String() {
			return r.ID, nil
		}
	}
	return "", fmt.Errorf("the gateway lists no refund of order %s", id)
}

// RedeliverRefund makes the fake gateway deliver a refund's payment.refunded
// count more times, with its original event id or a fresh one per delivery.
func (s *Stage) RedeliverRefund(ctx context.Context, refundID string, count int, newEventID bool) error {
	s.Logf("redeliver refund %s: count=%d new_event_id=%v", refundID, count, newEventID)
	return s.must(ctx, "POST", s.FakesURL()+"/refunds/"+refundID+"/redeliver",
		map[string]any{"count": count, "new_event_id": newEventID}, nil)
}

// PostWebhook plays the provider: it posts one signed event of type typ for
// the order straight to the API's webhook endpoint; it must answer 2xx.
func (s *Stage) PostWebhook(ctx context.Context, typ, eventID string, orderID uuid.UUID, amountCents int64) error {
	body := fmt.Sprintf(`{"id":%q,"type":%q,"data":{"order_id":%q,"amount_cents":%d}}`, eventID, typ, orderID, amountCents)
	secret := s.cfg.Env["WEBHOOK_SECRET"]
	if secret == "" {
		secret = config.DevWebhookSecret
	}
	req, err := http.NewRequestWithContext(ctx, "POST", s.APIURL()+"/webhooks/payments", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Webhook-Signature", webhook.Sign([]byte(secret), time.Now(), []byte(body)))
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("post %s %s: %w", typ, eventID, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post %s %s: status %d", typ, eventID, resp.StatusCode)
	}
	s.Logf("webhook %s %s for order %s", typ, eventID, orderID)
	return nil
}

// logStatus writes the order's status to the scenario's log.
func (s *Stage) logStatus(ctx context.Context, id uuid.UUID) error {
	var o struct {
		Status string `json:"status"`
	}
	if err := s.must(ctx, "GET", s.APIURL()+"/orders/"+id.String(), nil, &o); err != nil {
		return err
	}
	s.Logf("order %s ends %s", id, o.Status)
	return nil
}

func backfillRefunded() *Scenario {
	return &Scenario{
		Name: "backfill-refunded",
		Summary: "two orders are paid and one of them refunded; an operator then runs the backfill of order_paid " +
			"twice over the period: it re-sends the paid order only, and nothing of the refunded one comes back",
		Repeated: "backfill run twice over a paid and a refunded order",
		Orders:   2,
		Protected: Expect{Checks: with(once(2, eq(ExecOrderPaid, 4), eq(StockReserved, 2), eq(Refunds, 1),
			eq(Refunded, 1), eq(StockReleased, 1), eq(Reversed, 1), eq(RefundNotices, 1)))},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 4 },
		Run: func(ctx context.Context, s *Stage) error {
			from := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
			id, _, _, err := refundedOrder(ctx, s)
			if err != nil {
				return err
			}
			if _, _, err := s.PaidOrder(ctx, map[string]any{"sku": "sku-1", "quantity": 2}); err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the second order confirmed", 30*time.Second, func(c Counts) bool { return c.Delivered >= 2 }); err != nil {
				return err
			}
			for range 2 {
				if _, err := s.Command(ctx, "backfill", "--from", from); err != nil {
					return err
				}
			}
			if _, err := s.WaitFor(ctx, "the backfill handled", 30*time.Second, func(c Counts) bool { return c.ExecOrderPaid >= 4 }); err != nil {
				return err
			}
			return s.logStatus(ctx, id)
		},
	}
}
