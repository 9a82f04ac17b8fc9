package labpage_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/labpage"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// The page arms a fault point in error mode, in the process's own fault
// set, for the number of hits asked; only the points it was given, and only
// where it has a fault set.
func TestLabArmsAFaultPoint(t *testing.T) {
	t.Parallel()
	faults := fault.New(func() { t.Error("an error-mode fault must not crash the process") })
	lab := labpage.Config{Process: "all", Faults: faults, FaultPoints: []string{"order_paid.after_mark_paid"}}

	if rec := labRequest(t, lab, "POST", "/lab/faults/order_paid.after_mark_paid", "application/json", `{"times":2}`); rec.Code != http.StatusOK ||
		!strings.Contains(rec.Body.String(), "--faults order_paid.after_mark_paid=error:2") {
		t.Fatalf("arm = %d %s, want 200 naming the --faults equivalent", rec.Code, rec.Body)
	}
	for i, want := range []bool{true, true, false} {
		if got := errors.Is(faults.Hit("order_paid.after_mark_paid"), fault.ErrInjected); got != want {
			t.Errorf("hit %d fired %v, want %v", i+1, got, want)
		}
	}
	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"a point not offered", "/lab/faults/payment.before_gateway_call", `{"times":1}`, http.StatusNotFound},
		{"no times", "/lab/faults/order_paid.after_mark_paid", `{}`, http.StatusBadRequest},
		{"too many times", "/lab/faults/order_paid.after_mark_paid", `{"times":1000}`, http.StatusBadRequest},
	} {
		if rec := labRequest(t, lab, "POST", tc.path, "application/json", tc.body); rec.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
	}
	if faults.Hit("order_paid.after_mark_paid") != nil {
		t.Error("a refused request armed the point")
	}
	alone := labpage.Config{Process: "api", FaultPoints: []string{"order_paid.after_mark_paid"}}
	if rec := labRequest(t, alone, "POST", "/lab/faults/order_paid.after_mark_paid", "application/json", `{"times":1}`); rec.Code != http.StatusConflict ||
		!strings.Contains(rec.Body.String(), "--faults") {
		t.Errorf("arm without a fault set = %d %s, want 409 saying how", rec.Code, rec.Body)
	}
}
