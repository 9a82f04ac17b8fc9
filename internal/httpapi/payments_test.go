package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// paySetup is an API whose payments go to a fake gateway that is slow enough
// for concurrent requests to overlap.
func paySetup(t *testing.T, delayMS int) (*bundle, *fakes.Gateway) {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	gw := fakes.NewGateway(fakes.GatewayConfig{})
	t.Cleanup(gw.Close)
	if err := gw.SetControl(fakes.GatewayControl{DelayMS: delayMS}); err != nil {
		t.Fatal(err)
	}
	gwSrv := httptest.NewServer(fakes.New(gw, fakes.NewNotifier()))
	t.Cleanup(gwSrv.Close)
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{
		Pool:     pool,
		Ingestor: webhook.NewIngestor(pool, secret),
		Payments: payment.NewService(pool, payment.NewGatewayClient(gwSrv.URL, nil), payment.Config{}),
		Ready:    map[string]func(context.Context) error{"database": pool.Ping},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	t.Cleanup(srv.Close)
	return &bundle{pool: pool, url: srv.URL}, gw
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (b *bundle) pay(t *testing.T, orderID, key, body string) answer {
	t.Helper()
	req, _ := http.NewRequest("POST", b.url+"/orders/"+orderID+"/payments", strings.NewReader(body))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, raw}
}

func TestPaymentsIdempotencyKeyOverHTTP(t *testing.T) {
	t.Parallel()
	b, gw := paySetup(t, 0)
	o := b.newOrder(t).ID.String()

	first := b.pay(t, o, "k1", `{}`)
	again := b.pay(t, o, "k1", `{}`)
	if first.status != http.StatusCreated || again.status != first.status || !bytes.Equal(again.body, first.body) {
		t.Fatalf("replay: first %d %s, again %d %s; want the same 201 twice", first.status, first.body, again.status, again.body)
	}
	if got := b.pay(t, o, "k1", `{"payment_method":"pm_other"}`); got.status != http.StatusUnprocessableEntity {
		t.Errorf("same key, other body: %d %s, want 422", got.status, got.body)
	}
	if got := b.pay(t, o, "", `{}`); got.status != http.StatusBadRequest || !strings.Contains(string(got.body), "Idempotency-Key") {
		t.Errorf("missing key: %d %s, want 400 naming Idempotency-Key", got.status, got.body)
	}
	if got := b.pay(t, o, "k2", `{"payment_method":`); got.status != http.StatusBadRequest {
		t.Errorf("malformed body: %d %s, want 400", got.status, got.body)
	}
	if got := b.pay(t, "7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10", "k3", `{}`); got.status != http.StatusNotFound {
		t.Errorf("unknown order: %d %s, want 404", got.status, got.body)
	}
	if n := len(gw.Charges()); n != 1 {
		t.Errorf("gateway charges = %d, want 1", n)
	}
}

// A stored answer written back says so: Idempotency-Replayed: true, and the
// first answer of a key carries no such header. That holds for a refusal
// stored under a key as for a charge: a second key for a paid order is
// answered 409 "Order already paid", stored, and its retry gets that 409
// replayed.
func TestReplayedAnswerSaysSo(t *testing.T) {
	t.Parallel()
	b, _ := paySetup(t, 0)
	o := b.newOrder(t).ID.String()
	for _, tc := range []struct {
		key  string
		want int
	}{{"k1", http.StatusCreated}, {"k2", http.StatusConflict}} {
		key := tc.key
		first := b.pay(t, o, key, `{}`)
		again := b.pay(t, o, key, `{}`)
		if first.status != tc.want || again.status != tc.want || !bytes.Equal(again.body, first.body) {
			t.Fatalf("key %s: first %d %s, again %d %s; want the same %d twice", key, first.status, first.body, again.status, again.body, tc.want)
		}
		if got, ok := first.header["Idempotency-Replayed"]; ok {
			t.Errorf("key %s: the first answer (%d) carries Idempotency-Replayed %q, want none", key, first.status, got)
		}
		if got := again.header.Get("Idempotency-Replayed"); got != "true" {
			t.Errorf("key %s: the replayed answer (%d) carries Idempotency-Replayed %q, want true", key, again.status, got)
		}
	}
}

// Twenty clients send the same key at once: one charge at the gateway; the
// others get the stored response or 409 with Retry-After.
func TestPaymentsConcurrentRequestsWithOneKey(t *testing.T) {
	t.Parallel()
	b, gw := paySetup(t, 300)
	o := b.newOrder(t).ID.String()
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	start := make(chan struct{})
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			a := b.pay(t, o, "same-key", `{}`)
			if a.status == http.StatusConflict && a.header.Get("Retry-After") == "" {
				t.Errorf("409 without Retry-After")
			}
			mu.Lock()
			statuses[a.status]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if n := len(gw.Charges()); n != 1 {
		t.Errorf("gateway charges = %d, want exactly 1", n)
	}
	if statuses[http.StatusCreated] < 1 || statuses[http.StatusCreated]+statuses[http.StatusConflict] != 20 {
		t.Errorf("statuses = %v, want 201s and 409s only", statuses)
	}
}

// A second key while the first key's request is charging the order: 409 with
// Retry-After, titled so the client knows it is the order, not its key, and
// afterwards the stored 409 "Order already paid". One charge.
func TestPaymentsSecondKeyWhileTheOrderIsCharging(t *testing.T) {
	t.Parallel()
	b, gw := paySetup(t, 300)
	o := b.newOrder(t).ID.String()
	first := make(chan answer, 1)
	go func() { first <- b.pay(t, o, "tab-1", `{}`) }()
	for len(gw.Charges()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	got := b.pay(t, o, "tab-2", `{}`)
	if got.status != http.StatusConflict || got.header.Get("Retry-After") == "" ||
		!strings.Contains(string(got.body), "A charge of this order is in flight") {
		t.Fatalf("second key while charging: %d %v %s, want 409 with Retry-After, the order's charge in flight", got.status, got.header, got.body)
	}
	if a := <-first; a.status != http.StatusCreated {
		t.Fatalf("first key: %d %s, want 201", a.status, a.body)
	}
	if got := b.pay(t, o, "tab-2", `{}`); got.status != http.StatusConflict || !strings.Contains(string(got.body), "Order already paid") {
		t.Fatalf("second key after the charge: %d %s, want 409 Order already paid", got.status, got.body)
	}
	if n := len(gw.Charges()); n != 1 {
		t.Errorf("gateway charges = %d, want exactly 1", n)
	}
}
