package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// startTelemetry sets OpenTelemetry up from the OTEL_* variables (traces off
// unless an exporter is configured; metrics always kept for /metrics) and
// wraps logger so that every line written inside a span carries trace_id and
// span_id. flush sends the spans still buffered; serve defers it.
func startTelemetry(e env, name string, timeout time.Duration, logger *slog.Logger) (tel *telemetry.Telemetry, wrapped *slog.Logger, flush func(), err error) {
	tel, err = telemetry.Setup(e.ctx, e.getenv, "orderpaid-"+name)
	if err != nil {
		return nil, nil, nil, usageError{fmt.Errorf("configuration: %w", err)}
	}
	wrapped = slog.New(telemetry.NewLogHandler(logger.Handler()))
	flush = func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), timeout)
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
// METRICS_ADDR is empty, so several workers can share a host.
func serveWorkerMetrics(ctx context.Context, g *errgroup.Group, e env, cfg config.Config, tel *telemetry.Telemetry, logger *slog.Logger) error {
	if cfg.MetricsAddr == "" {
		return nil
	}
	ln, err := listen(cfg.MetricsAddr, "METRICS_ADDR")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tel.MetricsHandler)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	serveHTTP(ctx, g, "metrics", ln, mux, cfg.ShutdownTimeout, logger)
	fmt.Fprintf(e.stdout, "metrics listening on http://%s/metrics\n", ln.Addr())
	return nil
}
