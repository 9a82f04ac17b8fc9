package main

import (
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The lab's levers switch guards off, inject faults, crash at a boundary
// (--crash-at, --boundaries, the crash matrix's) and shorten the leases
// (--lease): in a production
// process they would let effects happen twice, and a log warning is easy to
// miss. api and worker refuse them (exit 2, naming ORDERPAID_DEV) unless the
// run is a dev run: ORDERPAID_DEV=1, as the scenario runner, bench and soak
// set for their children, or `orderpaid-lab all`. An empty --without, as bench
// passes with every guard on, pulls no lever.
func TestLabLeversNeedADevRun(t *testing.T) {
	t.Parallel()
	base := map[string]string{"DATABASE_URL": unreachableDB, "HTTP_ADDR": "127.0.0.1:0", "FAKES_ADDR": "127.0.0.1:0", "WEBHOOK_SECRET": testSecret}
	for _, tt := range []struct {
		dev     string // ORDERPAID_DEV
		args    []string
		refused string // in the output when refused; "" when the flags are accepted
	}{
		{"", []string{"api", "--without", "webhook-inbox"}, "--without webhook-inbox"},
		{"", []string{"api", "--faults", "payment.before_gateway_call=error:1"}, "--faults payment.before_gateway_call=error:1"},
		{"", []string{"worker", "--without", "state-check,ledger-key"}, "--without ledger-key,state-check"},
		{"", []string{"worker", "--faults", "order_paid.before_ack=crash"}, "--faults order_paid.before_ack=crash"},
		{"", []string{"worker", "--dedupe-executions"}, "--dedupe-executions"},
		{"", []string{"worker", "--without", "inbox", "--faults", "order_paid.before_ack=error:1"}, "--without inbox, --faults order_paid.before_ack=error:1"},
		{"", []string{"api", "--without", ""}, ""},
		{"", []string{"api", "--crash-at", "api/orders_payments/COMMIT#1:after"}, "--crash-at, --boundaries"},
		{"", []string{"worker", "--boundaries", "/nonexistent/boundaries.txt"}, "--crash-at, --boundaries"},
		{"", []string{"api", "--lease", "2s"}, "--lease"},
		{"1", []string{"api", "--crash-at", "api/orders_payments/COMMIT#1:after", "--lease", "2s"}, ""},
		{"", []string{"all", "--without", "ledger-key", "--faults", "order_paid.before_ack=error:1"}, ""},
		{"1", []string{"api", "--without", "webhook-inbox", "--faults", "payment.before_gateway_call=error:1"}, ""},
		{"1", []string{"worker", "--without", "state-check", "--faults", "order_paid.before_ack=crash", "--dedupe-executions"}, ""},
	} {
		t.Run(config.DevVariable+"="+tt.dev+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out := runBinary(t, merge(base, map[string]string{config.DevVariable: tt.dev}), 10*time.Second, tt.args...)
			if tt.refused == "" {
				// Past its flags, the command fails at the unreachable
				// database: exit 1.
				if code != 1 || !strings.Contains(out, "reach PostgreSQL") {
					t.Errorf("exit %d, want the levers accepted and exit 1 at the database; output:\n%s", code, out)
				}
				return
			}
			if code != 2 {
				t.Errorf("exit %d, want 2; output:\n%s", code, out)
			}
			for _, want := range []string{tt.args[0] + ": " + tt.refused, "lab lever", config.DevVariable + "=1"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
