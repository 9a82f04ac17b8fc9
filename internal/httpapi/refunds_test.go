package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// paidOrder creates an order and marks it paid, as the consumer of
// order_paid would.
func (b *bundle) paidOrder(t *testing.T) queries.Order {
	t.Helper()
	o := b.newOrder(t)
	if out, _, err := order.MarkPaid(context.Background(), queries.New(b.pool), o.ID, "evt_paid"); err != nil || out != "applied" {
		t.Fatalf("mark paid: %s, %v", out, err)
	}
	return o
}

// refund sends POST /orders/{id}/refunds and returns the status, the
// Idempotency-Replayed header ("" when absent) and the body.
func (b *bundle) refund(t *testing.T, orderID, key, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", b.url+"/orders/"+orderID+"/refunds", strings.NewReader(body))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Idempotency-Replayed"), string(raw)
}

// refundWrites counts the refund intents and refund_requested messages.
func (b *bundle) refundWrites(t *testing.T) (requests, messages int) {
	t.Helper()
	ctx := context.Background()
	if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM refund_requests").Scan(&requests); err != nil {
		t.Fatal(err)
	}
	if err := b.pool.QueryRow(ctx,
		"SELECT count(*) FROM watermill_outbox WHERE payload ->> 'destination_topic' = 'refund_requested'").Scan(&messages); err != nil {
		t.Fatal(err)
	}
	return requests, messages
}

// POST /orders/{id}/refunds has the Idempotency-Key semantics of payments,
// and an order has one refund, whatever the key.
func TestRefundRequestKeySemantics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.paidOrder(t)
	id := o.ID.String()

	status, replayed, first := b.refund(t, id, "r1", `{"note":"damaged"}`)
	if status != http.StatusCreated || replayed != "" || !strings.Contains(first, `"refund":"requested"`) {
		t.Fatalf("first: %d replayed=%s %s, want 201 requested", status, replayed, first)
	}
	status, replayed, again := b.refund(t, id, "r1", `{ "note" : "damaged" }`)
	if status != http.StatusCreated || replayed != "true" || again != first {
		t.Errorf("same key, same body: %d replayed=%s %s; want the first answer again, replayed", status, replayed, again)
	}
	for _, tc := range []struct {
		name, key, body string
		want            int
	}{
		{"same key, another body", "r1", `{"note":"other"}`, http.StatusUnprocessableEntity},
		{"another key", "r2", ``, http.StatusConflict},
		{"no key", "", ``, http.StatusBadRequest},
		{"unknown field", "r3", `{"amount_cents":1}`, http.StatusBadRequest},
		{"malformed JSON", "r4", `{"note":`, http.StatusBadRequest},
	} {
		if status, _, body := b.refund(t, id, tc.key, tc.body); status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.want)
		}
	}
	if status, _, _ := b.refund(t, "00000000-0000-0000-0000-000000000001", "r5", ""); status != http.StatusNotFound {
		t.Errorf("unknown order: %d, want 404", status)
	}
	if requests, msgs := b.refundWrites(t); requests != 1 || msgs != 1 {
		t.Errorf("%d refund intents, %d refund_requested messages; want 1 and 1", requests, msgs)
	}
}

// A pending order has nothing to refund: 409, nothing written.
func TestRefundOfAPendingOrderIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.newOrder(t)
	if status, _, body := b.refund(t, o.ID.String(), "r1", ""); status != http.StatusConflict || !strings.Contains(body, "pending") {
		t.Errorf("got %d %s, want 409 naming the status", status, body)
	}
	if requests, msgs := b.refundWrites(t); requests != 0 || msgs != 0 {
		t.Errorf("a refused refund wrote %d intents and %d messages", requests, msgs)
	}
}

// Twenty customers' clicks, each with its own key, at once: one refund is
// recorded, one message written; the others are told it was requested.
func TestConcurrentRefundRequestsRecordOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.paidOrder(t)
	const n = 20
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { statuses[i], _, _ = b.refund(t, o.ID.String(), fmt.Sprintf("k%d", i), "") })
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
		default:
			t.Errorf("status %d, want 201 or 409", s)
		}
	}
	if requests, msgs := b.refundWrites(t); created != 1 || requests != 1 || msgs != 1 {
		t.Errorf("%d answered 201, %d intents, %d messages; want 1 each", created, requests, msgs)
	}
}

// payment.refunded is accepted like payment.succeeded: once per event, into
// the inbox and the outbox (order_refunded), and a partial refund is refused.
func TestRefundWebhookIsAcceptedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.newOrder(t)
	refunded := func(id string, amount int64) []byte {
		return []byte(fmt.Sprintf(`{"id":%q,"type":"payment.refunded","data":{"order_id":%q,"amount_cents":%d}}`, id, o.ID, amount))
	}
	partial := refunded("evt_partial", 10)
	if status, out := b.post(t, partial, webhook.Sign(secret, time.Now(), partial)); status != http.StatusUnprocessableEntity {
		t.Errorf("partial refund: %d %v, want 422", status, out)
	}
	for i, want := range []string{"applied", "already_applied"} {
		body := refunded("evt_r", o.AmountCents)
		status, out := b.post(t, body, webhook.Sign(secret, time.Now(), body))
		if status != http.StatusOK || out["outcome"] != want {
			t.Errorf("delivery %d: %d %v, want 200 %s", i+1, status, out, want)
		}
	}
	var msgs int
	if err := b.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM watermill_outbox WHERE payload ->> 'destination_topic' = 'order_refunded'").Scan(&msgs); err != nil {
		t.Fatal(err)
	}
	if msgs != 1 {
		t.Errorf("%d order_refunded messages, want 1", msgs)
	}
}
