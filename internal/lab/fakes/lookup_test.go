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
	call := serveFakes(t, g, n)
	post := func(path, key, body string) int { return call(http.MethodPost, path, key, body).StatusCode }
	list := func(path string) (int, []map[string]any) {
		resp := call(http.MethodGet, path, "", "")
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

// With a search lag, a look-up by order leaves out what was just made,
// while the whole lists (the ground truth) and the keys still have it: a
// charge re-sent under its key is a replay, not a second charge. Set to 0,
// the look-up finds it again.
func TestSearchLagHidesWhatWasJustMadeFromLookUps(t *testing.T) {
	t.Parallel()
	g, n := fakes.NewGateway(fakes.GatewayConfig{}), fakes.NewNotifier()
	t.Cleanup(g.Close)
	call := serveFakes(t, g, n)
	count := func(path string) int {
		var out []map[string]any
		if err := json.NewDecoder(call(http.MethodGet, path, "", "").Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return len(out)
	}
	if r := call(http.MethodPost, "/control/search-lag", "", `{"seconds":-1}`); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("a negative lag = %d, want 400", r.StatusCode)
	}
	if r := call(http.MethodPost, "/control/search-lag", "", `{"seconds":60}`); r.StatusCode != http.StatusOK {
		t.Fatalf("POST /control/search-lag = %d, want 200", r.StatusCode)
	}
	call(http.MethodPost, "/charges", "k-a", `{"order_id":"a","amount_cents":100,"currency":"BRL"}`)
	call(http.MethodPost, "/notifications", "n-a", `{"order_id":"a","template":"order_confirmed"}`)
	if got := count("/charges?order_id=a"); got != 0 {
		t.Errorf("GET /charges?order_id=a within the lag = %d charges, want 0 (not indexed yet)", got)
	}
	if got := count("/notifications?order_id=a"); got != 0 {
		t.Errorf("GET /notifications?order_id=a within the lag = %d, want 0", got)
	}
	if got := count("/charges"); got != 1 {
		t.Errorf("GET /charges within the lag = %d, want the whole list's 1", got)
	}
	if r := call(http.MethodPost, "/charges", "k-a", `{"order_id":"a","amount_cents":100,"currency":"BRL"}`); r.Header.Get(fakes.ReplayedHeader) != "true" {
		t.Errorf("the charge re-sent under its key within the lag: replayed=%q, want true", r.Header.Get(fakes.ReplayedHeader))
	}
	call(http.MethodPost, "/control/search-lag", "", `{"seconds":0}`)
	if got := count("/charges?order_id=a"); got != 1 {
		t.Errorf("GET /charges?order_id=a with no lag = %d, want 1", got)
	}
	if got := count("/notifications?order_id=a"); got != 1 {
		t.Errorf("GET /notifications?order_id=a with no lag = %d, want 1", got)
	}
}

// serveFakes serves g and n for the test and returns a caller of their
// routes: method, path, Idempotency-Key ("" for none) and JSON body. The
// answer's body is closed when the test ends.
func serveFakes(t *testing.T, g *fakes.Gateway, n *fakes.Notifier) func(method, path, key, body string) *http.Response {
	srv := httptest.NewServer(fakes.New(g, n))
	t.Cleanup(srv.Close)
	return func(method, path, key, body string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
}
