package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Bad input must get a 400 (or 415) problem that names the field, and write
// nothing. Before these checks a NUL reached PostgreSQL (500, which a
// provider retries forever), and encoding/json's leniency (case-insensitive
// names, last duplicate wins, invalid UTF-8 replaced) stored the wrong value.

// reply is an answer to one request: its status, headers and problem, if any.
type reply struct {
	status  int
	header  http.Header
	problem map[string]any
}

// send sends one request with the given headers ("" values are left out).
func (b *bundle) send(t *testing.T, method, path string, headers map[string]string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(method, b.url+path, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header}
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		if err := json.Unmarshal(raw, &r.problem); err != nil {
			t.Fatalf("%s %s: problem %q: %v", method, path, raw, err)
		}
	}
	return r
}

// typed is the Content-Type header ct.
func typed(ct string) map[string]string { return map[string]string{"Content-Type": ct} }

func (b *bundle) rows(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// goInternals matches what a detail must not show: a Go type (httpapi.X,
// uuid.UUID, int64, "Go struct field") or an internal call chain ("create
// order: insert: ...").
var goInternals = regexp.MustCompile(`\b(httpapi|webhook|strictjson|order|payment|uuid|db|json|pgconn)\.[A-Z]|\bu?int(8|16|32|64)\b|\bstruct\b|\bSQLSTATE\b|[a-z ]+: [a-z ]+: `)

// wantProblem fails unless r is a problem of status whose detail names field
// and shows no internals.
func wantProblem(t *testing.T, what string, r reply, status int, field string) {
	t.Helper()
	detail, _ := r.problem["detail"].(string)
	switch {
	case r.status != status || r.problem == nil:
		t.Errorf("%s: %d %v, want a %d problem", what, r.status, r.problem, status)
	case !strings.Contains(detail, `"`+field+`"`):
		t.Errorf("%s: detail %q does not name %q", what, detail, field)
	case goInternals.MatchString(detail):
		t.Errorf("%s: detail %q shows internals", what, detail)
	}
}

func TestOrderCreateRefusesBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		name, body, field string
	}{
		{"NUL in customer_id", `{"customer_id":"c\u00001","amount_cents":100,"currency":"BRL"}`, "customer_id"},
		{"NUL in affiliate_id", `{"customer_id":"c1","affiliate_id":"a\u0000","amount_cents":100,"currency":"BRL"}`, "affiliate_id"},
		{"case-variant amount", `{"customer_id":"c1","amount_cents":100,"Amount_Cents":7,"currency":"BRL"}`, "Amount_Cents"},
		{"case-variant customer", `{"Customer_ID":"c1","amount_cents":100,"currency":"BRL"}`, "Customer_ID"},
		{"duplicate amount", `{"customer_id":"c1","amount_cents":100,"amount_cents":7,"currency":"BRL"}`, "amount_cents"},
		{"invalid UTF-8 in customer_id", "{\"customer_id\":\"c\xff1\",\"amount_cents\":100,\"currency\":\"BRL\"}", "customer_id"},
		{"lone surrogate in affiliate_id", `{"customer_id":"c1","affiliate_id":"a\ud800","amount_cents":100,"currency":"BRL"}`, "affiliate_id"},
		{"blank customer_id", `{"customer_id":"   ","amount_cents":100,"currency":"BRL"}`, "customer_id"},
		{"blank affiliate_id", `{"customer_id":"c1","affiliate_id":" \t ","amount_cents":100,"currency":"BRL"}`, "affiliate_id"},
		{"control character in customer_id", `{"customer_id":"c1\n","amount_cents":100,"currency":"BRL"}`, "customer_id"},
		{"customer_id of only a zero-width space", `{"customer_id":"\u200b","amount_cents":100,"currency":"BRL"}`, "customer_id"},
		{"right-to-left override in customer_id", `{"customer_id":"c1\u202egpj","amount_cents":100,"currency":"BRL"}`, "customer_id"},
		{"byte order mark in affiliate_id", `{"customer_id":"c1","affiliate_id":"\ufeffa1","amount_cents":100,"currency":"BRL"}`, "affiliate_id"},
		{"currency ZZZ", `{"customer_id":"c1","amount_cents":100,"currency":"ZZZ"}`, "currency"},
		{"currency XXX (no currency)", `{"customer_id":"c1","amount_cents":100,"currency":"XXX"}`, "currency"},
		{"currency XTS (testing)", `{"customer_id":"c1","amount_cents":100,"currency":"XTS"}`, "currency"},
		{"currency HRK (withdrawn)", `{"customer_id":"c1","amount_cents":100,"currency":"HRK"}`, "currency"},
		{"currency in lower case", `{"customer_id":"c1","amount_cents":100,"currency":"brl"}`, "currency"},
		{"currency missing", `{"customer_id":"c1","amount_cents":100}`, "currency"},
		{"amount of the wrong type", `{"customer_id":"c1","amount_cents":"100","currency":"BRL"}`, "amount_cents"},
	} {
		wantProblem(t, tc.name, b.send(t, "POST", "/orders", typed("application/json"), []byte(tc.body)), http.StatusBadRequest, tc.field)
	}
	if n := b.rows(t, "orders"); n != 0 {
		t.Errorf("refused orders wrote %d rows, want none", n)
	}
}

func TestOrderCreateAcceptsISOCurrencies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	currencies := []string{"BRL", "USD", "EUR", "JPY", "VES"} // VES: the bolívar since 2018
	for _, c := range currencies {
		r := b.send(t, "POST", "/orders", typed("application/json"), []byte(`{"customer_id":"c1","amount_cents":100,"currency":"`+c+`"}`))
		if r.status != http.StatusCreated {
			t.Errorf("currency %s: %d %v, want 201", c, r.status, r.problem)
		}
	}
	if n := b.rows(t, "orders"); n != len(currencies) {
		t.Errorf("%d orders, want %d", n, len(currencies))
	}
}

// POST /orders needs no header but Content-Type: without application/json,
// any web page could send it from a visitor's browser as a CORS simple
// request (text/plain, a form, a Blob with no type), no preflight asked.
func TestOrderCreateNeedsJSONContentType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`{"customer_id":"c1","amount_cents":100,"currency":"BRL"}`)
	for _, ct := range []string{"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "application/json; charset=latin1", "application/jsonx", ";;"} {
		r := b.send(t, "POST", "/orders", typed(ct), body)
		if r.status != http.StatusUnsupportedMediaType || r.problem == nil || r.header.Get("Accept") != "application/json" {
			t.Errorf("Content-Type %q: %d %v Accept %q, want a 415 problem with Accept: application/json", ct, r.status, r.problem, r.header.Get("Accept"))
		}
	}
	if n := b.rows(t, "orders"); n != 0 {
		t.Fatalf("refused media types wrote %d orders", n)
	}
	accepted := []string{"application/json", "application/json; charset=utf-8", `Application/JSON; Charset="UTF-8"`}
	for _, ct := range accepted {
		if r := b.send(t, "POST", "/orders", typed(ct), body); r.status != http.StatusCreated {
			t.Errorf("Content-Type %q: %d %v, want 201", ct, r.status, r.problem)
		}
	}
	if n := b.rows(t, "orders"); n != len(accepted) {
		t.Errorf("%d orders, want %d", n, len(accepted))
	}
}

// A payment that declares a body other than JSON is refused before anything
// is claimed or charged; one without Content-Type is read as JSON.
func TestPaymentWithANonJSONContentTypeIsRefused(t *testing.T) {
	t.Parallel()
	b, gw := paySetup(t, 0)
	o := b.newOrder(t).ID.String()
	path := "/orders/" + o + "/payments"
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded"} {
		r := b.send(t, "POST", path, map[string]string{"Content-Type": ct, "Idempotency-Key": "k1"}, []byte(`{}`))
		if r.status != http.StatusUnsupportedMediaType || r.problem == nil {
			t.Errorf("Content-Type %q: %d %v, want a 415 problem", ct, r.status, r.problem)
		}
	}
	if keys, charges := b.rows(t, "idempotency_keys"), b.rows(t, "order_charges"); keys != 0 || charges != 0 || len(gw.Charges()) != 0 {
		t.Fatalf("refused payments wrote %d keys, %d charge claims, %d gateway charges; want none", keys, charges, len(gw.Charges()))
	}
	if got := b.pay(t, o, "k1", `{}`); got.status != http.StatusCreated {
		t.Errorf("no Content-Type: %d %s, want 201", got.status, got.body)
	}
}

func TestWebhookRefusesBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.newOrder(t).ID.String()
	data := `"data":{"order_id":"` + o + `","amount_cents":10000}`
	for _, tc := range []struct {
		name, body, field string
	}{
		{"NUL in the event id", `{"id":"evt_\u0000a","type":"payment.succeeded",` + data + `}`, "id"},
		{"NUL in the type", `{"id":"evt_a","type":"payment.succeeded\u0000",` + data + `}`, "type"},
		{"case-variant id", `{"id":"evt_ok3","ID":"evt_other","type":"payment.succeeded",` + data + `}`, "ID"},
		{"duplicate id", `{"id":"evt_ok3","id":"evt_other","type":"payment.succeeded",` + data + `}`, "id"},
		{"case-variant nested amount", `{"id":"evt_a","type":"payment.succeeded","data":{"order_id":"` + o + `","amount_cents":10000,"Amount_Cents":1}}`, "data.Amount_Cents"},
		{"invalid UTF-8 in the id", "{\"id\":\"evt_\xff\",\"type\":\"payment.succeeded\"," + data + "}", "id"},
		{"another invalid UTF-8 id", "{\"id\":\"evt_\xfe\",\"type\":\"payment.succeeded\"," + data + "}", "id"},
		{"lone surrogate in the id", `{"id":"evt_\udfff","type":"payment.succeeded",` + data + `}`, "id"},
		{"evt_ alone", `{"id":"evt_","type":"payment.succeeded",` + data + `}`, "id"},
		{"spaces after evt_", `{"id":"evt_   ","type":"payment.succeeded",` + data + `}`, "id"},
		{"whitespace-only id", `{"id":"   ","type":"payment.succeeded",` + data + `}`, "id"},
		{"control character in the id", `{"id":"evt_a\u0007","type":"payment.succeeded",` + data + `}`, "id"},
		{"zero-width space as the id", `{"id":"evt_\u200b","type":"payment.succeeded",` + data + `}`, "id"},
		{"right-to-left override in the id", `{"id":"evt_a\u202eb","type":"payment.succeeded",` + data + `}`, "id"},
	} {
		body := []byte(tc.body)
		status, out := b.post(t, body, webhook.Sign(secret, time.Now(), body))
		wantProblem(t, tc.name, reply{status: status, problem: out}, http.StatusBadRequest, tc.field)
	}
	if inbox, outbox := b.written(t); inbox != 0 || outbox != 0 {
		t.Errorf("refused webhooks wrote inbox=%d outbox=%d, want nothing", inbox, outbox)
	}
}

// The webhook's Content-Type is not checked (see handleWebhook): the
// signature proves the body, and a 415 would lose a verified event.
func TestWebhookIsAcceptedWhateverItsContentType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.newOrder(t)
	body := eventBody("evt_plain", o.ID.String(), 10000)
	r := b.send(t, "POST", "/webhooks/payments", map[string]string{
		"Content-Type": "text/plain", webhook.SignatureHeader: webhook.Sign(secret, time.Now(), body),
	}, body)
	if inbox, _ := b.written(t); r.status != http.StatusOK || inbox != 1 {
		t.Errorf("signed event sent as text/plain: %d, inbox=%d; want 200 and 1", r.status, inbox)
	}
}

// A 405 says which methods the route has (RFC 9110 requires Allow).
func TestMethodNotAllowedCarriesAllow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := "/orders/7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10"
	for _, tc := range []struct{ method, path, allow string }{
		{"GET", "/orders", "POST"},
		{"DELETE", id, "GET"},
		{"GET", id + "/payments", "POST"},
		{"POST", id + "/audit", "GET"},
		{"PUT", "/webhooks/payments", "POST"},
		{"POST", "/healthz", "GET"},
	} {
		r := b.send(t, tc.method, tc.path, typed("application/json"), nil)
		if r.status != http.StatusMethodNotAllowed || r.problem == nil || r.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q, want a 405 problem with Allow %q", tc.method, tc.path, r.status, r.header.Get("Allow"), tc.allow)
		}
	}
}
