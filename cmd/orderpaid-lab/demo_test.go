package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// startAll runs `orderpaid-lab all` in-process on ports of its own below the
// ephemeral range, with args (--without ...), and returns its environment:
// the variables a participant would have exported.
func startAll(t *testing.T, args ...string) map[string]string {
	t.Helper()
	_, dbURL := pgtest.NewDatabase(t) // skips without PostgreSQL
	env := merge(freePorts(t), map[string]string{"DATABASE_URL": dbURL})
	out := newAddrWatcher("api", "fakes")
	startRun(t, env, out, append([]string{"all"}, args...)...)
	api := out.addr(t, "api")
	eventually(t, 10*time.Second, "api healthy", func() (bool, string) { return healthy(api + "/healthz") })
	return env
}

// runDemoWith runs `orderpaid-lab demo` with no flags and env, as scripts/demo.sh
// and a participant do.
func runDemoWith(t *testing.T, env map[string]string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := run(context.Background(), []string{"orderpaid", "demo"}, func(k string) string { return env[k] }, &out, testLog{t})
	return out.String(), err
}

// TestDemoOnOtherPorts runs the demo against `orderpaid-lab all` on ports other
// than 8080/8081, found from HTTP_ADDR and FAKES_ADDR alone: every effect
// once, 8 mugs left.
func TestDemoOnOtherPorts(t *testing.T) {
	t.Parallel()
	env := startAll(t)
	out, err := runDemoWith(t, env)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{env["HTTP_ADDR"], "every effect stayed at 1", "8 mugs are left"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, ":8080") || strings.Contains(out, ":8081") {
		t.Errorf("demo reached for a default port:\n%s", out)
	}
}

// TestDemoWithGuardsOff runs the demo against servers with guards off: it
// reports the effects that really happened twice and the guard that was off
// for each, instead of waiting for effects to be 1 or claiming they are.
func TestDemoWithGuardsOff(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		without string
		want    []string
	}{
		{"ledger-key", []string{"commission 2 (want 1): the ledger-key guard is off"}},
		{"charge-claim,idempotency-key", []string{"charges 2 (want 1): the charge-claim and idempotency-key guards are off",
			"no Idempotency-Replayed header: the retry was not answered from the stored response"}},
		{"stock-reservation", []string{"stock_reserved", "the stock-reservation guard is off", "mugs are left, not 8"}},
	} {
		t.Run(tt.without, func(t *testing.T) {
			t.Parallel()
			env := startAll(t, "--without", tt.without)
			start := time.Now()
			out, err := runDemoWith(t, env)
			if err != nil {
				t.Fatalf("demo: %v\n%s", err, out)
			}
			for _, want := range append(tt.want, "guards switched off: "+strings.ReplaceAll(tt.without, ",", ", ")) {
				if !strings.Contains(out, want) {
					t.Errorf("demo output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "every effect stayed at 1") {
				t.Errorf("demo claims every effect stayed at 1:\n%s", out)
			}
			if d := time.Since(start); d > 25*time.Second {
				t.Errorf("demo took %s: it waited for effects that were not coming", d)
			}
		})
	}
}

// TestDemoFindsTheServer: the demo's URLs come from the environment.
func TestDemoFindsTheServer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ addr, want string }{
		{":8080", "http://localhost:8080"},
		{"0.0.0.0:18080", "http://localhost:18080"},
		{"127.0.0.1:20001", "http://127.0.0.1:20001"},
		{"[::]:9000", "http://localhost:9000"},
	} {
		if got := urlOfAddr(tt.addr); got != tt.want {
			t.Errorf("urlOfAddr(%q) = %q, want %q", tt.addr, got, tt.want)
		}
	}
	// Nothing listens on port 1: the error names the URL the environment chose.
	_, err := runDemoWith(t, map[string]string{"API_URL": "http://127.0.0.1:1", "FAKES_URL": "http://127.0.0.1:2"})
	var ue usageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "http://127.0.0.1:1/") {
		t.Errorf("demo with API_URL on a closed port: err = %v, want one naming http://127.0.0.1:1", err)
	}
}
