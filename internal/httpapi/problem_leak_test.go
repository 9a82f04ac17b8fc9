package httpapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Problem details name the field and what to do, nothing else: not the
// chain of calls, an internal address, a provider's raw answer, or input
// reflected at any length.
func TestProblemDetailsLeakNothing(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	// A gateway that fails with an internal-looking body, at an address the
	// client must not learn.
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "upstream pool db-internal-7.example exhausted")
	}))
	t.Cleanup(gw.Close)
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{
		Pool:     pool,
		Ingestor: webhook.NewIngestor(pool, secret),
		Payments: payment.NewService(pool, payment.NewGatewayClient(gw.URL, nil), payment.Config{}),
		Ready: map[string]func(context.Context) error{
			"database": pool.Ping,
			"broker":   func(context.Context) error { return errors.New("dial tcp 10.1.2.3:5672: connect: connection refused") },
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	t.Cleanup(srv.Close)
	b := &bundle{pool: pool, url: srv.URL}
	o := b.newOrder(t).ID.String()

	cases := []struct {
		name, method, path, key, body string
		status                        int
		leaks                         []string
	}{
		{"a gateway failure", "POST", "/orders/" + o + "/payments", "k1", `{}`, http.StatusBadGateway,
			[]string{strings.TrimPrefix(gw.URL, "http://"), "db-internal", "call payment gateway", "pay order"}},
		{"a key reused for another request", "POST", "/orders/" + o + "/payments", "k1", `{"payment_method":"pm_other"}`, http.StatusUnprocessableEntity,
			[]string{"claim idempotency key", "for order"}},
		{"a huge path parameter", "GET", "/orders/" + strings.Repeat("x", 10000), "", "", http.StatusBadRequest,
			[]string{strings.Repeat("x", 400)}},
		{"a broker that is down", "GET", "/readyz", "", "", http.StatusServiceUnavailable,
			[]string{"10.1.2.3", "dial tcp"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if tc.key != "" {
				req.Header.Set("Idempotency-Key", tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, raw, tc.status)
			}
			for _, leak := range tc.leaks {
				if strings.Contains(string(raw), leak) {
					t.Errorf("the answer shows %.60q: %s", leak, raw)
				}
			}
			if len(raw) > 1000 {
				t.Errorf("answer of %d bytes; a problem stays small whatever the input", len(raw))
			}
		})
	}
}
