package fakes_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
)

func notification(orderID string) map[string]string {
	return map[string]string{"order_id": orderID, "template": "order_confirmed"}
}

func TestNotifierSendsOncePerKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := do(t, http.MethodPost, b.url+"/notifications", "msg-1", notification("o1"))
	if first.status != http.StatusCreated || first.header.Get(fakes.ReplayedHeader) != "" {
		t.Fatalf("first send = %d %s, want a fresh 201", first.status, first.body)
	}
	for range 3 {
		r := do(t, http.MethodPost, b.url+"/notifications", "msg-1", notification("o1"))
		if r.status != first.status || !bytes.Equal(r.body, first.body) || r.header.Get(fakes.ReplayedHeader) != "true" {
			t.Errorf("repeat = %d %s %s=%q, want the stored answer replayed", r.status, r.body, fakes.ReplayedHeader, r.header.Get(fakes.ReplayedHeader))
		}
	}
	do(t, http.MethodPost, b.url+"/notifications", "msg-2", notification("o2"))

	sent := decode[[]fakes.Notification](t, do(t, http.MethodGet, b.url+"/notifications", "", nil))
	if len(sent) != 2 || sent[0] != decode[fakes.Notification](t, first) || sent[1].OrderID != "o2" {
		t.Fatalf("GET /notifications = %+v, want msg-1 then msg-2", sent)
	}
	if n := sent[0]; n.IdempotencyKey != "msg-1" || n.OrderID != "o1" || n.Template != "order_confirmed" || n.ID[:4] != "ntf_" {
		t.Errorf("notification = %+v", n)
	}
}

func TestNotifierRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		key    string
		body   any
		status int
	}{
		{"missing key", "", notification("o1"), http.StatusBadRequest},
		{"key reused for another order", "used", notification("o2"), http.StatusUnprocessableEntity},
		{"key reused with another template", "used", map[string]string{"order_id": "o1", "template": "x"}, http.StatusUnprocessableEntity},
		{"no order", "k", map[string]string{"template": "order_confirmed"}, http.StatusBadRequest},
		{"unknown field", "k", `{"order_id":"o1","cc":"x"}`, http.StatusBadRequest},
		{"malformed JSON", "k", `{`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			do(t, http.MethodPost, b.url+"/notifications", "used", notification("o1"))
			r := do(t, http.MethodPost, b.url+"/notifications", tt.key, tt.body)
			if r.status != tt.status || r.header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("status = %d %s (%s), want %d problem+json", r.status, r.body, r.header.Get("Content-Type"), tt.status)
			}
			if n := len(b.notifier.Notifications()); n != 1 {
				t.Errorf("notifications = %d, want only the first one", n)
			}
		})
	}
}

func TestNotifierFailNextSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctl := do(t, http.MethodPost, b.url+"/control/notifications", "", map[string]int{"fail_next": 1, "delay_ms": 1})
	if got := decode[fakes.NotifierControl](t, ctl); got != (fakes.NotifierControl{FailNext: 1, DelayMS: 1}) {
		t.Fatalf("POST /control/notifications = %s", ctl.body)
	}
	if r := do(t, http.MethodPost, b.url+"/notifications", "k", notification("o1")); r.status != http.StatusServiceUnavailable {
		t.Fatalf("send = %d, want 503", r.status)
	}
	if n := len(b.notifier.Notifications()); n != 0 {
		t.Fatalf("notifications after 503 = %d, want 0", n)
	}
	if r := do(t, http.MethodPost, b.url+"/notifications", "k", notification("o1")); r.status != http.StatusCreated {
		t.Fatalf("retry = %d, want 201", r.status)
	}
	got := decode[fakes.NotifierControl](t, do(t, http.MethodGet, b.url+"/control/notifications", "", nil))
	if got != (fakes.NotifierControl{DelayMS: 1}) || len(b.notifier.Notifications()) != 1 {
		t.Errorf("control = %+v, notifications = %d; want fail_next used up and 1 sent", got, len(b.notifier.Notifications()))
	}
}
