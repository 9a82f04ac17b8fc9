package consumer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// pay charges o at the fake gateway through the payment service, as POST
// /orders/{id}/payments does, so that the service records the charge a
// refund names.
func (b *bundle) pay(t *testing.T, o queries.Order) {
	t.Helper()
	svc := payment.NewService(b.pool, payment.NewGatewayClient(b.gwURL, nil), payment.Config{})
	resp, err := svc.Pay(context.Background(), payment.Request{OrderID: o.ID, Key: "pay-" + o.ID.String()})
	if err != nil || resp.Status != 201 {
		t.Fatalf("pay order %s: %d %s, %v", o.ID, resp.Status, resp.Body, err)
	}
}

func orderRefunded(t *testing.T, o queries.Order, eventID string) *message.Message {
	t.Helper()
	msg, err := messages.NewOrderRefunded(messages.OrderRefunded{OrderID: o.ID, AmountCents: o.AmountCents, Source: "webhook:" + eventID})
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// outboxMessage returns the one message the flow wrote to topic for o, as
// the relay would deliver it; it fails unless there is exactly one.
func (b *bundle) outboxMessage(t *testing.T, o queries.Order, topic string) *message.Message {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT payload ->> 'uuid', convert_from(decode(payload ->> 'payload', 'base64'), 'UTF8')
		FROM watermill_outbox WHERE order_id = $1 AND payload ->> 'destination_topic' = $2`, o.ID, topic)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ id, payload string }
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.id, &x.payload)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Fatalf("%d %s messages in the outbox for order %s, want 1", len(found), topic, o.ID)
	}
	return message.NewMessage(found[0].id, []byte(found[0].payload))
}

func (b *bundle) status(t *testing.T, o queries.Order) string {
	t.Helper()
	got, err := order.Get(context.Background(), b.q, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got.Status
}

func (b *bundle) ledgerSum(t *testing.T, o queries.Order) int64 {
	t.Helper()
	var sum int64
	if err := b.pool.QueryRow(context.Background(),
		`SELECT coalesce(sum(amount_cents), 0) FROM ledger_entries WHERE order_id = $1`, o.ID).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

// A paid order whose items are short is compensated: refunded once at the
// gateway, though order_paid is delivered three times (once after the stock
// was refilled) and the worker is killed between the gateway's refund and
// its record; no stock is taken, no commission credited, no confirmation
// written; the order ends refunded and the customer is told once.
func TestShortOrderIsRefundedOnceThroughRedeliveriesAndACrash(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := newStockOrder(t, b, "scarce", 1, 2)
	b.pay(t, o)
	for i, event := range []string{"evt_1", "evt_1", "evt_2"} {
		if i == 2 {
			if _, err := b.pool.Exec(context.Background(), `UPDATE stock SET available = 5 WHERE sku = 'scarce'`); err != nil {
				t.Fatal(err)
			}
		}
		if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, event)); err != nil {
			t.Fatalf("order_paid %d: %v", i+1, err)
		}
	}
	request := b.outboxMessage(t, o, messages.TopicRefundRequested)

	b.faults.Arm(consumer.FaultAfterGatewayRefund, fault.Fail, 1) // killed after the refund, before its record
	if err := deliver(b.c.HandleRefundRequested, request); !errors.Is(err, fault.ErrInjected) {
		t.Fatalf("first refund_requested: %v, want the injected crash", err)
	}
	for i := range 2 {
		if err := deliver(b.c.HandleRefundRequested, request); err != nil {
			t.Fatalf("refund_requested redelivery %d: %v", i+1, err)
		}
	}
	notice := b.outboxMessage(t, o, messages.TopicRefundConfirmed)
	for range 2 {
		if err := deliver(b.c.HandleRefundConfirmed, notice); err != nil {
			t.Fatal(err)
		}
	}

	if refunds := b.gateway.Refunds(); len(refunds) != 1 {
		t.Errorf("the gateway made %d refunds, want 1: %+v", len(refunds), refunds)
	}
	// The redelivery after the crash asked the gateway for the order's
	// refunds first and found the first one (askThenRefund): nothing was
	// sent again; the next found the order refunded and called no one.
	var replayed, calls int
	if err := b.pool.QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE replayed AND refund_id = $2), count(*) FROM gateway_refund_calls WHERE order_id = $1`,
		o.ID, b.gateway.Refunds()[0].ID).Scan(&replayed, &calls); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || replayed != 1 {
		t.Errorf("%d refund answers recorded, %d of them the first refund found; want 1 and 1 (the first was lost in the crash)", calls, replayed)
	}
	a := b.audit(t, o.ID)
	if got := b.status(t, o); got != order.StatusRefunded {
		t.Errorf("status %s, want refunded", got)
	}
	if a.Refunded != 1 || a.RefundNotified != 1 || a.StockReserved != 0 || a.Commission != 0 ||
		a.ConfirmationEnqueued != 0 || a.CommissionReversed != 0 {
		t.Errorf("audit %+v: want refunded 1, refund_notified 1 and nothing reserved, credited or confirmed", a)
	}
	if got := available(t, b, "scarce"); got != 5 {
		t.Errorf("available %d, want the 5 the operator set: the short order took nothing", got)
	}
}

// A refund reported by the provider is applied once, however often and
// under however many events it comes: the order moves to refunded once, its
// reservation goes back once, its commission is reversed once, and its
// ledger sums to zero. Each guard switched off shows its own damage.
func TestRefundOfAPaidOrderAppliesEachEffectOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                              string
		off                               *switches.Set
		refunded, released, reversed, avl int64
	}{
		{"guarded", nil, 1, 1, 1, 10},
		{"without state-check", switches.Without(effect.GuardStateCheck), 4, 1, 1, 10},
		{"without stock-reservation", switches.Without(effect.GuardStockReservation), 1, 4, 1, 16},
		{"without ledger-key", switches.Without(effect.GuardLedgerKey), 1, 1, 2, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.off)
			o := newStockOrder(t, b, "sku-1", 10, 2)
			if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_paid")); err != nil {
				t.Fatal(err)
			}
			for _, event := range []string{"evt_r1", "evt_r1", "evt_r1", "evt_r2"} {
				if err := deliver(b.c.HandleOrderRefunded, orderRefunded(t, o, event)); err != nil {
					t.Fatal(err)
				}
			}
			a := b.audit(t, o.ID)
			if a.Refunded != tc.refunded || a.StockReleased != tc.released || a.CommissionReversed != tc.reversed {
				t.Errorf("refunded %d, stock_released %d, commission_reversed %d; want %d, %d, %d",
					a.Refunded, a.StockReleased, a.CommissionReversed, tc.refunded, tc.released, tc.reversed)
			}
			if got := available(t, b, "sku-1"); got != tc.avl {
				t.Errorf("available %d, want %d", got, tc.avl)
			}
			wantSum := int64(0)
			if tc.reversed == 2 {
				wantSum = -ledger.Commission(o.AmountCents) // the affiliate now owes the commission
			}
			if got := b.ledgerSum(t, o); got != wantSum {
				t.Errorf("the order's ledger sums to %d, want %d", got, wantSum)
			}
		})
	}
}

// The provider does not promise order: the refund arrives before the
// payment, and both are redelivered. The order converges to refunded, every
// effect is 0 or 1, and the late payment reserves nothing and credits
// nothing.
func TestRefundBeforePaymentConverges(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := newStockOrder(t, b, "sku-1", 10, 2)
	steps := []struct {
		handle func(*message.Message) error
		msg    *message.Message
	}{
		{b.c.HandleOrderRefunded, orderRefunded(t, o, "evt_r")},
		{b.c.HandleOrderPaid, orderPaid(t, o, "evt_p")},
		{b.c.HandleOrderRefunded, orderRefunded(t, o, "evt_r")},
		{b.c.HandleOrderPaid, orderPaid(t, o, "evt_p")},
	}
	for i, s := range steps {
		if err := deliver(s.handle, s.msg); err != nil {
			t.Fatalf("delivery %d: %v", i+1, err)
		}
	}
	a := b.audit(t, o.ID)
	if b.status(t, o) != order.StatusRefunded || a.Refunded != 1 || a.Paid != 0 || a.StockReserved != 0 ||
		a.StockReleased != 0 || a.Commission != 0 || a.ConfirmationEnqueued != 0 || b.ledgerSum(t, o) != 0 {
		t.Errorf("status %s, audit %+v, ledger %d: want refunded, and no payment effect", b.status(t, o), a, b.ledgerSum(t, o))
	}
	if got := available(t, b, "sku-1"); got != 10 {
		t.Errorf("available %d, want 10", got)
	}
	b.outboxMessage(t, o, messages.TopicRefundConfirmed) // the customer is told, once
}

// The commission of order_paid's step 2 and a refund of the same order, at
// the same moment: the refund holds the order's row lock, has looked for a
// commission to reverse and found none; the commission step must wait for
// it and then credit nothing. Without the lock (or the status check under
// it), the commission is credited after the refund found nothing to
// reverse: a commission for a refunded order, and nothing left to reverse it.
func TestCommissionWaitsForAConcurrentRefund(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.newOrder(t)
	b.faults.Arm(consumer.FaultAfterMarkPaid, fault.Fail, 1) // step 1 done, step 2 not yet
	if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_p")); !errors.Is(err, fault.ErrInjected) {
		t.Fatalf("order_paid: %v, want the injected failure", err)
	}

	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if out, _, err := order.MarkRefunded(ctx, queries.New(tx), o.ID, "evt_r"); err != nil || out != "applied" {
		t.Fatalf("refund: %s, %v", out, err)
	}
	if out, err := ledger.ReverseCommission(ctx, queries.New(tx), o.ID, "evt_r"); err != nil || out != "not_applicable" {
		t.Fatalf("reverse: %s, %v; want not_applicable, there is no commission yet", out, err)
	}

	done := make(chan error, 1)
	go func() { done <- deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_p")) }()
	pgtest.WaitLockWaiters(t, b.pool, 1) // the redelivery's step 2 waits for the refund
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a := b.audit(t, o.ID); a.Commission != 0 || b.ledgerSum(t, o) != 0 {
		t.Fatalf("commission %d, ledger %d: a commission was credited to a refunded order", a.Commission, b.ledgerSum(t, o))
	}
}
