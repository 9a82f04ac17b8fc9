package fakes_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
)

// The look-ups by order answer that order's records only; lookup_fail_next
// fails the next look-ups with 503 and leaves the whole lists, which the
// tests read as the ground truth, answering; forget-keys makes the
// notifier send again under an old key.
func TestLookupsByOrder(t *testing.T) {
	t.Parallel()
	g, n := fakes.NewGateway(fakes.GatewayConfig{}), fakes.NewNotifier()
	t.Cleanup(g.Close)
	srv := httptest.NewServer(fakes.New(g, n))
	t.Cleanup(srv.Close)
	post := func(path, key, body string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	list := func(path string) (int, []map[string]any) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	post("/charges", "k-a", `{"order_id":"a","amount_cents":100,"currency":"BRL"}`)
	post("/charges", "k-b", `{"order_id":"b","amount_cents":100,"currency":"BRL"}`)
	post("/notifications", "n-a", `{"order_id":"a","template":"order_confirmed"}`)

	if status, got := list("/charges?order_id=a"); status != http.StatusOK || len(got) != 1 || got[0]["order_id"] != "a" {
		t.Fatalf("GET /charges?order_id=a = %d %v, want order a's one charge", status, got)
	}
	if status, got := list("/notifications?order_id=b"); status != http.StatusOK || len(got) != 0 {
		t.Fatalf("GET /notifications?order_id=b = %d %v, want none", status, got)
	}
	if err := g.SetControl(fakes.GatewayControl{LookupFailNext: 1}); err != nil {
		t.Fatal(err)
	}
	if status, got := list("/charges"); status != http.StatusOK || len(got) != 2 {
		t.Fatalf("GET /charges with a look-up failing = %d, %d charges; want the whole list", status, len(got))
	}
	if status, _ := list("/refunds?order_id=a"); status != http.StatusServiceUnavailable {
		t.Fatalf("look-up with lookup_fail_next 1 = %d, want 503", status)
	}
	if status, _ := list("/charges?order_id=a"); status != http.StatusOK {
		t.Fatalf("the look-up after the failure = %d, want 200", status)
	}
	if status := post("/control/notifications/forget-keys", "", ""); status != http.StatusOK {
		t.Fatalf("forget-keys = %d", status)
	}
	post("/notifications", "n-a", `{"order_id":"a","template":"order_confirmed"}`)
	if got := len(n.Notifications()); got != 2 {
		t.Fatalf("notifications after the provider forgot its keys and n-a came again = %d, want 2", got)
	}
}
