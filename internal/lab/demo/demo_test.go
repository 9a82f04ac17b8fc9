package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// TestDemoReport covers what a live server cannot show on demand: an effect
// wrong with every guard on, a server that does not say which guards are
// off, and a flow that stops before the end.
func TestDemoReport(t *testing.T) {
	t.Parallel()
	a := Audit{OrderID: "o1", Executions: map[string]int64{"order_paid": 2}, Effects: map[string]int64{
		effect.Charges: 1, effect.Paid: 1, effect.StockReserved: 1, effect.Commission: 2, effect.ConfirmationEnqueued: 1,
		effect.ConfirmationDelivered: 1, effect.NotificationSent: 1, effect.StockReleased: 0,
	}}
	for _, tt := range []struct {
		name    string
		off     []string
		known   bool
		want    string
		wantErr bool
	}{
		{"guard off", []string{"ledger-key"}, true, "commission 2 (want 1): the ledger-key guard is off", false},
		{"every guard on", nil, true, "commission 2 (want 1), with ledger-key on: a bug", true},
		{"not known", nil, false, "is the server running with --without ledger-key?", true},
	} {
		var out strings.Builder
		err := Walk{Out: &out}.report(a, 8, tt.off, tt.known)
		if !strings.Contains(out.String(), tt.want) || (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, output:\n%s\nwant %q, error %v", tt.name, err, out.String(), tt.want, tt.wantErr)
		}
	}

	for _, tt := range []struct {
		name string
		a    Audit
		want string
	}{
		{"no worker", Audit{Executions: map[string]int64{}, Effects: map[string]int64{}}, "is a worker running"},
		{"poisoned", Audit{Executions: map[string]int64{"order_paid": 1}, Effects: map[string]int64{effect.Paid: 0}}, "poison queue"},
	} {
		err := tt.a.stuck(1, 30*time.Second)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: stuck = %v, want it to say %q", tt.name, err, tt.want)
		}
	}
}
