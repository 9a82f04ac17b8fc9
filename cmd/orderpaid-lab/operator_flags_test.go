package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/app"
)

// unreachableDB is a DATABASE_URL nothing listens on: a command that gets
// past its flags fails there with exit 1, not 2.
const unreachableDB = "postgres://postgres@127.0.0.1:1/none?sslmode=disable"

// testSecret is a WEBHOOK_SECRET for the api in these tests.
const testSecret = "whsec_test_only_0123456789abcdef0123456789"

// runBinary runs the real orderpaid binary with args and env (on top of the
// test's environment) and returns its exit code and output. A process still
// running after timeout is killed and reported as -1: a flag that should have
// been refused let it start.
func runBinary(t *testing.T, env map[string]string, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	bin := binary(t) // built once, before the clock starts
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return -1, string(out)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("orderpaid %s: %v", strings.Join(args, " "), err)
	}
	return 0, string(out)
}

// Operators' mistakes that used to be taken silently: a zero duration became
// the default, a misspelt fault point armed nothing, and the fakes accepted
// guard and fault flags that mean nothing there. Each exits 2 with a message
// naming the flag and what it accepts.
func TestOperatorMistakesExit2NamingTheFlag(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": unreachableDB, "HTTP_ADDR": "127.0.0.1:0", "FAKES_ADDR": "127.0.0.1:0", "WEBHOOK_SECRET": testSecret}
	tests := []struct {
		args []string
		want []string // in the output
	}{
		{[]string{"retention", "--once", "--execution-window", "0"}, []string{"--execution-window 0s", "want a positive duration", "720h0m0s"}},
		{[]string{"retention", "--once", "--execution-window", "-1h"}, []string{"--execution-window -1h0m0s", "want a positive duration"}},
		{[]string{"retention", "--once", "--inbox-window", "0"}, []string{"--inbox-window 0s", "want at least 72h0m0s"}},
		{[]string{"retention", "--once", "--outbox-window", "0"}, []string{"--outbox-window 0s", "want at least --inbox-window"}},
		{[]string{"retention", "--once", "--interval", "0"}, []string{"--interval 0s", "want a positive duration", "1h0m0s"}},
		{[]string{"retention", "--interval", "0"}, []string{"--interval 0s", "want a positive duration"}},
		{[]string{"worker", "--faults", "order_paid.after_mark_payd=error:1"}, []string{"--faults", `unknown fault point "order_paid.after_mark_payd"`, "order_paid.after_mark_paid, order_paid.before_ack"}},
		{[]string{"api", "--faults", "payment.before_gateway_cal=error"}, []string{"--faults", "unknown fault point", "payment.before_gateway_call"}},
		{[]string{"all", "--faults", "order_paid.before_ack=crash,AfterProviderCall=error"}, []string{"--faults", `unknown fault point "AfterProviderCall"`}},
		{[]string{"reconcile", "--grace", "0"}, []string{"--grace 0s", "want a window of 0 or more and a positive grace"}},
		{[]string{"reconcile", "--window", "-1h"}, []string{"--window -1h0m0s"}},
		{[]string{"reconcile", "--dry-rum"}, []string{"flag provided but not defined: -dry-rum"}},
		{[]string{"reconcile", "--without", "inbox"}, []string{"--without inbox", "refused in a production process"}},
		{[]string{"fakes", "--without", "inbox"}, []string{"flag provided but not defined: -without"}},
		{[]string{"fakes", "--faults", "order_paid.before_ack=error"}, []string{"flag provided but not defined: -faults"}},
		{[]string{"fakes", "--dedupe-executions"}, []string{"flag provided but not defined: -dedupe-executions"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			// Without the check the command starts (the fakes serve until
			// killed) or fails later, at the database: exit -1 or 1.
			code, out := runBinary(t, env, 10*time.Second, tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; output:\n%s", code, out)
			}
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// Every declared fault point is accepted in a dev run: the worker and the
// api get past their flags and fail only at the unreachable database (exit 1).
func TestFaultsAcceptEveryDeclaredPoint(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": unreachableDB, "HTTP_ADDR": "127.0.0.1:0", "WEBHOOK_SECRET": testSecret, "ORDERPAID_DEV": "1"}
	for _, point := range app.FaultPoints() {
		for _, sub := range []string{"worker", "api"} {
			t.Run(sub+" "+point, func(t *testing.T) {
				t.Parallel()
				code, out := runBinary(t, env, 10*time.Second, sub, "--faults", point+"=error:1")
				if code != 1 || !strings.Contains(out, "reach PostgreSQL") {
					t.Errorf("exit %d, want 1 at the database; output:\n%s", code, out)
				}
			})
		}
	}
}
