package consumer_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// refusedOrder returns a paid order of 2 units of sku (10 in stock) with an
// affiliate, its commission credited, and its customer's refund_requested,
// with the fake gateway told to refuse that order's refunds for good (402).
func (b *bundle) refusedOrder(t *testing.T, sku string) (queries.Order, *message.Message) {
	t.Helper()
	o := newStockOrder(t, b, sku, 10, 2)
	b.pay(t, o)
	if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_paid")); err != nil {
		t.Fatalf("order_paid: %v", err)
	}
	if a := b.audit(t, o.ID); a.Paid != 1 || a.StockReserved != 1 || a.Commission != 1 {
		t.Fatalf("after order_paid: paid %d, stock_reserved %d, commission %d; want 1 each", a.Paid, a.StockReserved, a.Commission)
	}
	if err := b.gateway.SetControl(fakes.GatewayControl{RefuseRefundsOf: o.ID.String()}); err != nil {
		t.Fatal(err)
	}
	return o, refundRequested(t, o)
}

// wantRefusedOnly checks, in SQL and at the fake gateway, that the refusal
// of o's refund is all that happened: the order is refund_failed (one
// transition), the gateway was asked asked times and refunded nothing, no
// refund, release or reversal is recorded, and the order's stock (8 of 10
// left, 2 reserved) and commission (1000 cents) are as order_paid left them.
func (b *bundle) wantRefusedOnly(t *testing.T, o queries.Order, sku string, asked int) {
	t.Helper()
	if got := b.status(t, o); got != order.StatusRefundFailed {
		t.Errorf("status %s, want refund_failed", got)
	}
	if n := len(b.gateway.Refusals()); n != asked {
		t.Errorf("the gateway was asked %d times, want %d (once per delivery that found the order paid)", n, asked)
	}
	if refunds := b.gateway.Refunds(); len(refunds) != 0 {
		t.Errorf("the gateway made refunds %+v, want none", refunds)
	}
	for query, want := range map[string]int{
		"SELECT count(*) FROM gateway_refund_calls WHERE order_id = $1":                                            asked,
		"SELECT count(*) FROM gateway_refund_calls WHERE order_id = $1 AND status = 402 AND detail <> ''":          asked,
		"SELECT count(*) FROM order_transitions WHERE order_id = $1 AND to_status = 'refund_failed'":               1,
		"SELECT count(*) FROM order_transitions WHERE order_id = $1 AND to_status = 'refunded'":                    0,
		"SELECT count(*) FROM stock_movements WHERE order_id = $1 AND kind = 'release'":                            0,
		"SELECT count(*) FROM stock_reservations WHERE order_id = $1 AND released_at IS NOT NULL":                  0,
		"SELECT count(*) FROM ledger_entries WHERE order_id = $1 AND entry_type = 'affiliate_commission_reversal'": 0,
	} {
		if n := b.count(t, query, o.ID); n != want {
			t.Errorf("%s: %d, want %d", query, n, want)
		}
	}
	if got := available(t, b, sku); got != 8 {
		t.Errorf("%s: %d available, want 8: nothing was given back", sku, got)
	}
	if sum := b.ledgerSum(t, o); sum != 1000 {
		t.Errorf("ledger sum %d, want the commission's 1000: nothing was reversed", sum)
	}
	if a := b.audit(t, o.ID); a.RefundFailed != 1 || a.Refunded != 0 || a.StockReleased != 0 || a.CommissionReversed != 0 {
		t.Errorf("audit refund_failed %d refunded %d stock_released %d commission_reversed %d, want 1 0 0 0",
			a.RefundFailed, a.Refunded, a.StockReleased, a.CommissionReversed)
	}
}

// A refund the gateway refuses for good (402) ends the order refund_failed,
// once, with the refusal recorded: the delivery fails permanently, naming
// the gateway's status and body. Its redelivery, and a replay, find the
// order refund_failed and do not ask the gateway again: one call for three
// deliveries. No compensation runs: the stock stays reserved, the
// commission credited. A late order_paid changes nothing.
func TestRefundRefusedForGoodEndsRefundFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o, request := b.refusedOrder(t, "refused")

	err := deliver(b.c.HandleRefundRequested, request)
	if !consumer.IsPermanent(err) || !strings.Contains(err.Error(), "402") || !strings.Contains(err.Error(), "cannot be refunded") {
		t.Fatalf("first delivery: %v (permanent %v), want a permanent error naming the gateway's 402 and its words", err, consumer.IsPermanent(err))
	}
	b.wantRefusedOnly(t, o, "refused", 1)

	var again []error
	for range 2 {
		again = append(again, deliver(b.c.HandleRefundRequested, request))
	}
	b.wantRefusedOnly(t, o, "refused", 1)
	for i, err := range again {
		if !consumer.IsPermanent(err) || !strings.Contains(err.Error(), "402") || !strings.Contains(err.Error(), "not asked again") {
			t.Errorf("redelivery %d: %v (permanent %v), want a permanent error naming the recorded 402", i+1, err, consumer.IsPermanent(err))
		}
	}
	if got, want := b.steps(t, consumer.HandlerRefundRequested, o), []string{
		"refund_failed=applied", "refund_failed=already_applied", "refund_failed=already_applied",
	}; !slices.Equal(got, want) {
		t.Errorf("refund_requested's runs answered %q, want %q", got, want)
	}

	if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_late")); err != nil {
		t.Fatalf("late order_paid: %v", err)
	}
	deliverBatch(t, b, []*message.Message{orderPaid(t, o, "evt_late_batch")})
	b.wantRefusedOnly(t, o, "refused", 1)
	if a := b.audit(t, o.ID); a.Paid != 1 || a.ConfirmationEnqueued != 1 || a.StockReserved != 1 || a.Commission != 1 {
		t.Errorf("after late order_paid: paid %d, confirmation_enqueued %d, stock_reserved %d, commission %d; want 1 each",
			a.Paid, a.ConfirmationEnqueued, a.StockReserved, a.Commission)
	}
}

// Through the router, the refused refund_requested lands in the poison
// queue with the gateway's status and body as its reason, in the row and
// in its metadata; republished (an operator's replay), it comes back to
// the poison queue without a second call to the gateway.
func TestRefundRefusedForGoodIsPoisonedWithItsReason(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	brk := b.startRouter(t)
	o, request := b.refusedOrder(t, "poisoned")

	for i := 1; i <= 2; i++ {
		if err := brk.Publisher.Publish(messages.TopicRefundRequested, request.Copy()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the refund_requested poisoned", func() bool {
			return b.count(t, "SELECT count(*) FROM poison_messages WHERE topic = 'refund_requested'") == i
		})
	}
	rows, err := b.pool.Query(context.Background(),
		`SELECT reason, metadata FROM poison_messages WHERE handler = 'refund_requested' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for n := 1; rows.Next(); n++ {
		var reason string
		var raw []byte
		if err := rows.Scan(&reason, &raw); err != nil {
			t.Fatal(err)
		}
		var meta map[string]string
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		want := "order " + o.ID.String() + " cannot be refunded (control refuse_refunds_of)"
		if !strings.Contains(reason, "402") || !strings.Contains(reason, want) || meta[middleware.ReasonForPoisonedKey] != reason {
			t.Errorf("poisoned refund_requested %d: reason %q, metadata %v; want the gateway's 402 and %q in both", n, reason, meta, want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	b.wantRefusedOnly(t, o, "poisoned", 1)
}

// A person refunds the order in the provider's dashboard: the provider's
// payment.refunded (order_refunded) moves it refund_failed -> refunded and
// runs the compensation the refusal held back, once: the stock given back,
// the commission reversed, the customer told.
func TestRefundFailedOrderIsRefundedFromTheDashboard(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o, request := b.refusedOrder(t, "dashboard")
	if err := deliver(b.c.HandleRefundRequested, request); !consumer.IsPermanent(err) {
		t.Fatalf("refund_requested: %v, want the refusal", err)
	}
	for range 2 {
		if err := deliver(b.c.HandleOrderRefunded, orderRefunded(t, o, "evt_dashboard")); err != nil {
			t.Fatalf("order_refunded: %v", err)
		}
	}
	if got := b.status(t, o); got != order.StatusRefunded {
		t.Errorf("status %s, want refunded", got)
	}
	if n := b.count(t, "SELECT count(*) FROM order_transitions WHERE order_id = $1 AND from_status = 'refund_failed' AND to_status = 'refunded'", o.ID); n != 1 {
		t.Errorf("%d transitions refund_failed -> refunded, want 1", n)
	}
	if a := b.audit(t, o.ID); a.RefundFailed != 1 || a.Refunded != 1 || a.StockReleased != 1 || a.CommissionReversed != 1 {
		t.Errorf("audit refund_failed %d refunded %d stock_released %d commission_reversed %d, want 1 each",
			a.RefundFailed, a.Refunded, a.StockReleased, a.CommissionReversed)
	}
	if got := available(t, b, "dashboard"); got != 10 {
		t.Errorf("dashboard: %d available, want 10", got)
	}
	if sum := b.ledgerSum(t, o); sum != 0 {
		t.Errorf("ledger sum %d, want 0", sum)
	}
	if n := len(b.gateway.Refusals()); n != 1 {
		t.Errorf("the gateway was asked %d times, want the 1 refusal", n)
	}
	if b.outboxMessage(t, o, messages.TopicRefundConfirmed) == nil {
		t.Error("no refund_confirmed for the customer")
	}
}

// steps lists, run by run in the order they ran, the guarded steps each
// execution of handler for o recorded, as "effect=outcome ...".
func (b *bundle) steps(t *testing.T, handler string, o queries.Order) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT coalesce(string_agg((r.v ->> 'effect') || '=' || (r.v ->> 'outcome'), ' ' ORDER BY r.n), '')
		FROM executions e LEFT JOIN jsonb_array_elements(e.outcomes) WITH ORDINALITY AS r(v, n) ON true
		WHERE e.order_id = $1 AND e.handler = $2
		GROUP BY e.id ORDER BY e.id`, o.ID, handler)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
