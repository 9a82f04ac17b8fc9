package fakes_test

import (
	"net/http"
	"strings"
	"testing"
)

// failable is one fake endpoint as the fail_status tests see it: where it is
// told to fail, where its effect is asked for, with what body (made before
// the fake is told to fail), and how many effects it performed.
type failable struct {
	name    string
	control string // path of its control endpoint
	effect  string // path that performs its effect
	body    func(*testing.T, *bundle) any
	count   func(*bundle) int
}

var failables = []failable{
	{"gateway", "/control/gateway", "/charges",
		func(*testing.T, *bundle) any { return charge("o1", 100) },
		func(b *bundle) int { return len(b.gateway.Charges()) }},
	{"gateway refunds", "/control/gateway", "/refunds",
		func(t *testing.T, b *bundle) any { return refund(charged(t, b, 100).ID, 100) },
		func(b *bundle) int { return len(b.gateway.Refunds()) }},
	{"notifier", "/control/notifications", "/notifications",
		func(*testing.T, *bundle) any { return notification("o1") },
		func(b *bundle) int { return len(b.notifier.Notifications()) }},
}

// fail_status and retry_after_s shape the fail_next failures: the status and
// the Retry-After header a provider sends when it is rate limiting ("not
// now"), or refusing, and nothing is performed while it fails.
func TestFailStatusAndRetryAfter(t *testing.T) {
	t.Parallel()
	for _, f := range failables {
		for _, tt := range []struct {
			name           string
			control        map[string]int
			wantStatus     int
			wantRetryAfter string
		}{
			{"rate limited", map[string]int{"fail_next": 2, "fail_status": 429, "retry_after_s": 1}, http.StatusTooManyRequests, "1"},
			{"refused", map[string]int{"fail_next": 2, "fail_status": 422}, http.StatusUnprocessableEntity, ""},
			{"default is 503", map[string]int{"fail_next": 2}, http.StatusServiceUnavailable, ""},
			{"503 with Retry-After", map[string]int{"fail_next": 2, "retry_after_s": 30}, http.StatusServiceUnavailable, "30"},
		} {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				body := f.body(t, b)
				if r := do(t, http.MethodPost, b.url+f.control, "", tt.control); r.status != http.StatusOK {
					t.Fatalf("POST %s %v = %d %s, want 200", f.control, tt.control, r.status, r.body)
				}
				for i := range 2 {
					r := do(t, http.MethodPost, b.url+f.effect, "k", body)
					if r.status != tt.wantStatus || r.header.Get("Retry-After") != tt.wantRetryAfter ||
						r.header.Get("Content-Type") != "application/problem+json" {
						t.Fatalf("attempt %d = %d Retry-After=%q (%s) %s, want %d Retry-After=%q problem+json",
							i+1, r.status, r.header.Get("Retry-After"), r.header.Get("Content-Type"), r.body, tt.wantStatus, tt.wantRetryAfter)
					}
				}
				if n := f.count(b); n != 0 {
					t.Fatalf("effects while failing = %d, want 0", n)
				}
				r := do(t, http.MethodPost, b.url+f.effect, "k", body)
				if r.status != http.StatusCreated || r.header.Get("Retry-After") != "" {
					t.Fatalf("attempt after fail_next ran out = %d Retry-After=%q %s, want a plain 201", r.status, r.header.Get("Retry-After"), r.body)
				}
				if n := f.count(b); n != 1 {
					t.Errorf("effects = %d, want 1", n)
				}
			})
		}
	}
}

// Bad fail_status and retry_after_s values are refused with a problem that
// names the field, and leave the settings as they were.
func TestControlRefusesBadFailStatusAndRetryAfter(t *testing.T) {
	t.Parallel()
	for _, f := range failables {
		for _, tt := range []struct {
			body      string
			wantField string
		}{
			{`{"fail_next":1,"fail_status":200}`, "fail_status"},
			{`{"fail_next":1,"fail_status":399}`, "fail_status"},
			{`{"fail_next":1,"fail_status":600}`, "fail_status"},
			{`{"fail_next":1,"fail_status":-1}`, "fail_status"},
			{`{"fail_next":1,"fail_status":"429"}`, "fail_status"},
			{`{"fail_next":1,"retry_after_s":-1}`, "retry_after_s"},
			{`{"fail_next":1,"retry_after_s":3601}`, "retry_after_s"},
		} {
			t.Run(f.name+"/"+tt.body, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				body := f.body(t, b)
				r := do(t, http.MethodPost, b.url+f.control, "", tt.body)
				if r.status != http.StatusBadRequest || r.header.Get("Content-Type") != "application/problem+json" ||
					!strings.Contains(string(r.body), tt.wantField) {
					t.Errorf("POST %s %s = %d (%s) %s, want a 400 problem naming %s",
						f.control, tt.body, r.status, r.header.Get("Content-Type"), r.body, tt.wantField)
				}
				if r := do(t, http.MethodPost, b.url+f.effect, "k", body); r.status != http.StatusCreated {
					t.Errorf("effect after the refused settings = %d %s, want 201: the settings must not change", r.status, r.body)
				}
			})
		}
	}
}

// The bounds themselves are accepted.
func TestControlAcceptsFailStatusAndRetryAfterBounds(t *testing.T) {
	t.Parallel()
	for _, f := range failables {
		for _, body := range []string{
			`{"fail_status":400,"retry_after_s":0}`,
			`{"fail_status":599,"retry_after_s":3600}`,
		} {
			t.Run(f.name+"/"+body, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				if r := do(t, http.MethodPost, b.url+f.control, "", body); r.status != http.StatusOK || !strings.Contains(string(r.body), body[1:len(body)-1]) {
					t.Errorf("POST %s %s = %d %s, want 200 echoing the settings", f.control, body, r.status, r.body)
				}
			})
		}
	}
}
