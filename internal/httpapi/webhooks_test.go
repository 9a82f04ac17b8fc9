package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

var secret = []byte("test-secret")

type bundle struct {
	pool *pgxpool.Pool
	url  string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{
		Pool:     pool,
		Ingestor: webhook.NewIngestor(pool, secret),
		Ready:    map[string]func(context.Context) error{"database": pool.Ping},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	t.Cleanup(srv.Close)
	return &bundle{pool: pool, url: srv.URL}
}

func (b *bundle) newOrder(t *testing.T) queries.Order {
	t.Helper()
	o, err := order.Create(context.Background(), queries.New(b.pool), order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func eventBody(eventID, orderID string, amount int64) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","data":{"order_id":%q,"amount_cents":%d}}`, eventID, orderID, amount))
}

// post sends a webhook with the given signature header and returns the
// status and the decoded body.
func (b *bundle) post(t *testing.T, body []byte, signature string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", b.url+"/webhooks/payments", bytes.NewReader(body))
	if signature != "" {
		req.Header.Set(webhook.SignatureHeader, signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// written counts what a webhook can write: inbox rows and outbox messages.
func (b *bundle) written(t *testing.T) (inbox, outbox int) {
	t.Helper()
	ctx := context.Background()
	if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM webhook_inbox").Scan(&inbox); err != nil {
		t.Fatal(err)
	}
	if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM watermill_outbox").Scan(&outbox); err != nil {
		t.Fatal(err)
	}
	return inbox, outbox
}

func TestWebhookDuplicateIsAcceptedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.newOrder(t)
	body := eventBody("evt_1", o.ID.String(), 10000)
	for i, want := range []string{"applied", "already_applied", "already_applied"} {
		status, out := b.post(t, body, webhook.Sign(secret, time.Now(), body))
		if status != http.StatusOK || out["outcome"] != want {
			t.Fatalf("delivery %d: %d %v, want 200 %s", i+1, status, out, want)
		}
	}
	if inbox, outbox := b.written(t); inbox != 1 || outbox != 1 {
		t.Errorf("inbox=%d outbox=%d, want 1 and 1", inbox, outbox)
	}
}

func TestWebhookConcurrentDuplicatesAreAcceptedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.newOrder(t)
	body := eventBody("evt_1", o.ID.String(), 10000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, out := b.post(t, body, webhook.Sign(secret, time.Now(), body))
			mu.Lock()
			defer mu.Unlock()
			outcomes[fmt.Sprint(status, " ", out["outcome"])]++
		}()
	}
	wg.Wait()
	if outcomes["200 applied"] != 1 || outcomes["200 already_applied"] != 19 {
		t.Errorf("outcomes = %v, want one applied and 19 already_applied", outcomes)
	}
	if inbox, outbox := b.written(t); inbox != 1 || outbox != 1 {
		t.Errorf("inbox=%d outbox=%d, want 1 and 1", inbox, outbox)
	}
}

func TestWebhookTwoEventsForOnePaymentAreBothAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.newOrder(t)
	for _, id := range []string{"evt_a", "evt_b"} {
		body := eventBody(id, o.ID.String(), 10000)
		if status, out := b.post(t, body, webhook.Sign(secret, time.Now(), body)); out["outcome"] != "applied" {
			t.Fatalf("%s: %d %v, want applied", id, status, out)
		}
	}
	if inbox, outbox := b.written(t); inbox != 2 || outbox != 2 {
		t.Errorf("inbox=%d outbox=%d, want 2 and 2 (the consumer dedupes by business key)", inbox, outbox)
	}
}

func TestWebhookRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.newOrder(t)
	good := eventBody("evt_1", o.ID.String(), 10000)
	sign := func(body []byte) string { return webhook.Sign(secret, time.Now(), body) }
	unknown := eventBody("evt_2", "7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10", 10000)
	tests := []struct {
		name      string
		body      []byte
		signature string
		want      int
	}{
		{"missing signature", good, "", http.StatusUnauthorized},
		{"wrong secret", good, webhook.Sign([]byte("other"), time.Now(), good), http.StatusUnauthorized},
		{"signature of another body", good, sign([]byte(`{}`)), http.StatusUnauthorized},
		{"expired signature", good, webhook.Sign(secret, time.Now().Add(-time.Hour), good), http.StatusUnauthorized},
		{"garbled signature header", good, "t=abc,v1=zz", http.StatusUnauthorized},
		{"malformed JSON", []byte(`{"id":`), sign([]byte(`{"id":`)), http.StatusBadRequest},
		{"unknown field", []byte(`{"id":"evt_3","type":"payment.succeeded","data":{},"x":1}`), sign([]byte(`{"id":"evt_3","type":"payment.succeeded","data":{},"x":1}`)), http.StatusBadRequest},
		{"missing order id", []byte(`{"id":"evt_4","type":"payment.succeeded","data":{"amount_cents":1}}`), sign([]byte(`{"id":"evt_4","type":"payment.succeeded","data":{"amount_cents":1}}`)), http.StatusBadRequest},
		{"unknown order", unknown, sign(unknown), http.StatusNotFound},
		{"amount differs from the order", eventBody("evt_5", o.ID.String(), 1), sign(eventBody("evt_5", o.ID.String(), 1)), http.StatusUnprocessableEntity},
		{"oversized body", bytes.Repeat([]byte("x"), webhook.MaxBodyBytes+1), "t=1,v1=00", http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		status, out := b.post(t, tt.body, tt.signature)
		if status != tt.want {
			t.Errorf("%s: status %d %v, want %d", tt.name, status, out, tt.want)
		}
		if out["title"] == nil || out["status"] == nil {
			t.Errorf("%s: body %v is not a problem+json document", tt.name, out)
		}
	}
	if inbox, outbox := b.written(t); inbox != 0 || outbox != 0 {
		t.Errorf("refused webhooks wrote inbox=%d outbox=%d, want nothing", inbox, outbox)
	}
}

func TestWebhookUnknownEventTypeIsAcknowledgedAndIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`{"id":"evt_9","type":"charge.dispute.created","data":{}}`)
	status, out := b.post(t, body, webhook.Sign(secret, time.Now(), body))
	if status != http.StatusOK || out["outcome"] != "ignored" {
		t.Errorf("got %d %v, want 200 ignored", status, out)
	}
	if inbox, outbox := b.written(t); inbox != 0 || outbox != 0 {
		t.Errorf("ignored event wrote inbox=%d outbox=%d", inbox, outbox)
	}
}

func TestOrdersValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name, body, field string
		want              int
	}{
		{"valid", `{"customer_id":"c1","amount_cents":100,"currency":"BRL"}`, "", http.StatusCreated},
		{"malformed JSON", `{"customer_id":`, "", http.StatusBadRequest},
		{"missing customer", `{"amount_cents":100,"currency":"BRL"}`, "customer_id", http.StatusBadRequest},
		{"negative amount", `{"customer_id":"c1","amount_cents":-1,"currency":"BRL"}`, "amount_cents", http.StatusBadRequest},
		{"amount as string", `{"customer_id":"c1","amount_cents":"100","currency":"BRL"}`, "amount_cents", http.StatusBadRequest},
		{"bad currency", `{"customer_id":"c1","amount_cents":100,"currency":"real"}`, "currency", http.StatusBadRequest},
		{"unknown field", `{"customer_id":"c1","amount_cents":100,"currency":"BRL","tip":1}`, "tip", http.StatusBadRequest},
	}
	for _, tt := range tests {
		resp, err := http.Post(b.url+"/orders", "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || !strings.Contains(string(raw), tt.field) {
			t.Errorf("%s: %d %s, want %d naming %q", tt.name, resp.StatusCode, raw, tt.want, tt.field)
		}
	}
	for _, path := range []string{"/orders/not-a-uuid", "/orders/7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10", "/orders/7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10/audit"} {
		resp, err := http.Get(b.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 4 || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s = %d %s, want a 4xx problem+json", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}
