package fakes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// bundle is what setup starts for one test: the fakes behind a real HTTP
// server, and a webhook receiver the gateway delivers to.
type bundle struct {
	gateway  *fakes.Gateway
	notifier *fakes.Notifier
	url      string // base URL of the fakes
	receiver *receiver
	secret   []byte
}

// setup starts the fakes and a receiver. The receiver answers its n-th
// webhook (from 0) with statuses[n], and 200 once statuses runs out.
func setup(t *testing.T, statuses ...int) *bundle {
	t.Helper()
	secret := []byte("test-secret")
	rcv := &receiver{secret: secret, statuses: statuses}
	rcvSrv := httptest.NewServer(rcv)
	t.Cleanup(rcvSrv.Close)

	gw := fakes.NewGateway(fakes.GatewayConfig{
		WebhookURL:    rcvSrv.URL,
		WebhookSecret: secret,
		RetryBase:     time.Millisecond,
		MaxAttempts:   10,
	})
	n := fakes.NewNotifier()
	srv := httptest.NewServer(fakes.New(gw, n))
	t.Cleanup(srv.Close)
	t.Cleanup(gw.Close) // cleanups run last-in first-out: deliveries stop before the servers
	return &bundle{gateway: gw, notifier: n, url: srv.URL, receiver: rcv, secret: secret}
}

// received is one webhook request as the receiver saw it.
type received struct {
	body      []byte // as it arrived
	event     fakes.Event
	verifyErr error // webhook.Verify's verdict on the signature
}

// receiver is an httptest handler standing in for the orderpaid webhook endpoint.
type receiver struct {
	secret   []byte
	statuses []int

	mu  sync.Mutex
	got []received
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev fakes.Event
	_ = json.Unmarshal(body, &ev)
	verr := webhook.Verify(rc.secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.DefaultTolerance)
	rc.mu.Lock()
	n := len(rc.got)
	rc.got = append(rc.got, received{body: body, event: ev, verifyErr: verr})
	rc.mu.Unlock()
	status := http.StatusOK
	if n < len(rc.statuses) {
		status = rc.statuses[n]
	}
	w.WriteHeader(status)
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// eventIDs returns the event id of every webhook received, in order.
func (rc *receiver) eventIDs() []string {
	var ids []string
	for _, r := range rc.requests() {
		ids = append(ids, r.event.ID)
	}
	return ids
}

// response is an HTTP answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends method url with body (JSON-encoded unless it is a string) and,
// when key is not empty, an Idempotency-Key header. It fails the test on a
// transport error, so it must be called from the test's goroutine.
func do(t *testing.T, method, url, key string, body any) response {
	t.Helper()
	r, err := send(t.Context(), method, url, key, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send is do for other goroutines: it returns the error.
func send(ctx context.Context, method, url, key string, body any) (response, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = bytes.NewBufferString(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			return response{}, fmt.Errorf("encode body: %w", err)
		}
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return response{}, fmt.Errorf("build request: %w", err)
	}
	if key != "" {
		req.Header.Set(fakes.IdempotencyKeyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("read body of %s %s: %w", method, url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: got}, nil
}

// race sends n POSTs to path released at the same moment, the i-th with the
// key and body request(i) gives, and returns the answers in that order. It
// fails the test on a transport error.
func (b *bundle) race(t *testing.T, n int, path string, request func(i int) (key string, body any)) []response {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	answers := make([]response, n)
	errs := make([]error, n)
	for i := range n {
		key, body := request(i)
		wg.Go(func() {
			<-start
			answers[i], errs[i] = send(t.Context(), http.MethodPost, b.url+path, key, body)
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return answers
}

// decode unmarshals a response body into a T, failing the test otherwise.
func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return v
}

// waitDelivered waits for every pending webhook delivery, at most 10s.
func (b *bundle) waitDelivered(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := b.gateway.WaitDelivered(ctx); err != nil {
		t.Fatal(err)
	}
}

func charge(orderID string, amount int64) map[string]any {
	return map[string]any{"order_id": orderID, "amount_cents": amount, "currency": "BRL"}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := do(t, http.MethodGet, b.url+"/healthz", "", nil); r.status != http.StatusOK || string(r.body) != "ok" {
		t.Fatalf("GET /healthz = %d %q, want 200 ok", r.status, r.body)
	}
}
