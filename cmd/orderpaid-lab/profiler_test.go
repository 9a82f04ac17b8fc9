package main

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// Go's profiler has no authentication, and a heap profile holds
// WEBHOOK_SECRET and the database password: the worker's /metrics, which a
// scraper on another machine reads, never serves it. The profiler is served
// only with PPROF_ADDR set, on a listener of its own, on loopback (a port
// alone is 127.0.0.1's).
func TestProfilerOnlyWhenAskedOnLoopback(t *testing.T) {
	t.Parallel()
	_, dbURL := pgtest.NewDatabase(t)
	env := merge(brokerEnv(t, "postgres"), map[string]string{"DATABASE_URL": dbURL, "METRICS_ADDR": "127.0.0.1:0"})
	get := func(u string) int {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("with PPROF_ADDR", func(t *testing.T) {
		t.Parallel()
		out := newAddrWatcher("metrics", "profiler")
		startRun(t, merge(env, map[string]string{"PPROF_ADDR": ":0"}), out, "worker")
		metrics := strings.TrimSuffix(out.addr(t, "metrics"), "/metrics")
		profiler := strings.TrimSuffix(out.addr(t, "profiler"), "/debug/pprof/")
		if got := get(metrics + "/metrics"); got != http.StatusOK {
			t.Errorf("GET /metrics = %d, want 200", got)
		}
		if got := get(metrics + "/debug/pprof/"); got != http.StatusNotFound {
			t.Errorf("GET /debug/pprof/ on METRICS_ADDR = %d, want 404: the metrics port serves no profiler", got)
		}
		u, err := url.Parse(profiler)
		if err != nil {
			t.Fatal(err)
		}
		if host, _, _ := net.SplitHostPort(u.Host); host != "127.0.0.1" {
			t.Errorf("PPROF_ADDR=:0 listens on %s, want 127.0.0.1 (loopback)", u.Host)
		}
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
			if got := get(profiler + path); got != http.StatusOK {
				t.Errorf("GET %s on PPROF_ADDR = %d, want 200", path, got)
			}
		}
	})

	t.Run("without PPROF_ADDR", func(t *testing.T) {
		t.Parallel()
		out := newAddrWatcher("metrics")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"orderpaid", "worker"}, devGetenv(env), out, testLog{t}) }()
		metrics := strings.TrimSuffix(out.addr(t, "metrics"), "/metrics") // the profiler's line, if any, comes right after
		if got := get(metrics + "/debug/pprof/"); got != http.StatusNotFound {
			t.Errorf("GET /debug/pprof/ on METRICS_ADDR = %d, want 404: the metrics port serves no profiler", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("worker: %v", err)
		}
		out.mu.Lock()
		defer out.mu.Unlock()
		if p, ok := out.addrs["profiler"]; ok {
			t.Errorf("a worker without PPROF_ADDR serves the profiler on %s", p)
		}
	})
}
