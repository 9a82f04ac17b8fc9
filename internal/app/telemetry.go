package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"golang.org/x/sync/errgroup"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// startTelemetry sets OpenTelemetry up from the OTEL_* variables (traces off
// unless an exporter is configured; metrics always kept for /metrics) and
// wraps logger so that every line written inside a span carries trace_id and
// span_id. flush sends the spans still buffered; serve defers it.
func startTelemetry(e Env, name string, timeout time.Duration, logger *slog.Logger, watch ...sdktrace.SpanProcessor) (tel *telemetry.Telemetry, wrapped *slog.Logger, flush func(), err error) {
	tel, err = telemetry.Setup(e.Ctx, e.Getenv, "orderpaid-"+name, watch...)
	if err != nil {
		return nil, nil, nil, UsageError{fmt.Errorf("configuration: %w", err)}
	}
	wrapped = slog.New(telemetry.NewLogHandler(logger.Handler()))
	flush = func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(e.Ctx), timeout)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			// Not a reason to fail the shutdown: the collector may be gone.
			wrapped.Warn("telemetry not flushed", "err", err)
		}
	}
	return tel, wrapped, flush, nil
}

// serveWorkerMetrics serves GET /metrics on METRICS_ADDR for a process that
// runs the worker without the api (which serves /metrics itself). Off when
// METRICS_ADDR is empty, so several workers can share a host. It serves
// /metrics only: the profiler has no authentication, and is PPROF_ADDR's
// (serveProfiler).
func serveWorkerMetrics(ctx context.Context, g *errgroup.Group, e Env, cfg config.Config, tel *telemetry.Telemetry, logger *slog.Logger) error {
	if cfg.MetricsAddr == "" {
		return nil
	}
	ln, err := listen(cfg.MetricsAddr, "METRICS_ADDR")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tel.MetricsHandler)
	serveHTTP(ctx, g, "metrics", ln, mux, cfg.ShutdownTimeout, logger)
	fmt.Fprintf(e.Stdout, "metrics listening on http://%s/metrics\n", ln.Addr())
	return nil
}

// serveProfiler serves Go's profiler (/debug/pprof/) on PPROF_ADDR, which
// config.Load keeps on loopback (config.LoopbackProfilerAddr says why). Off
// when PPROF_ADDR is empty. Its writes may take 2 minutes: a CPU profile or
// a trace answers after the seconds it was asked for.
func serveProfiler(ctx context.Context, g *errgroup.Group, e Env, cfg config.Config, logger *slog.Logger) error {
	if cfg.ProfilerAddr == "" {
		return nil
	}
	ln, err := listen(cfg.ProfilerAddr, "PPROF_ADDR")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	timeouts := defaultHTTPTimeouts
	timeouts.Write = 2 * time.Minute
	serveHTTPWith(ctx, g, "profiler", ln, newHTTPServer(mux, timeouts), cfg.ShutdownTimeout, logger)
	fmt.Fprintf(e.Stdout, "profiler listening on http://%s/debug/pprof/\n", ln.Addr())
	return nil
}
