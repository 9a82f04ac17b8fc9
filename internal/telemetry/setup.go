package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Telemetry is what the program is instrumented with. Nothing is installed
// globally (no otel.SetTracerProvider): run hands it to what needs it.
type Telemetry struct {
	// TracerProvider makes spans: the no-op unless a trace exporter is set.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments of Metrics and of otelhttp.
	MeterProvider metric.MeterProvider
	// Metrics are the flow's own instruments.
	Metrics *Metrics
	// MetricsHandler serves MeterProvider's metrics in the Prometheus text
	// format (GET /metrics); nil when built by New.
	MetricsHandler http.Handler

	shutdown []func(context.Context) error
}

// New assembles a Telemetry from providers built by the caller: tests pass an
// in-memory span exporter and a ManualReader. A nil provider is the no-op.
func New(tp trace.TracerProvider, mp metric.MeterProvider) (*Telemetry, error) {
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	m, err := NewMetrics(mp)
	if err != nil {
		return nil, err
	}
	return &Telemetry{TracerProvider: tp, MeterProvider: mp, Metrics: m}, nil
}

// NewTracerProvider returns an SDK TracerProvider with opts and the processor
// that stamps order.id on every span started under WithOrderID. Setup uses
// it; so do tests, with an in-memory exporter.
func NewTracerProvider(opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append(opts, sdktrace.WithSpanProcessor(orderStamper{}))...)
}

// Setup builds the SDK from the OTEL_* variables read through getenv (see
// readSettings for the rules). defaultService names the service when
// OTEL_SERVICE_NAME is unset. Call Shutdown before exit to flush.
//
// watch, the lab's (fault.Boundaries), sees every span even where no
// exporter is set: with it, every span is made.
func Setup(ctx context.Context, getenv func(string) string, defaultService string, watch ...sdktrace.SpanProcessor) (*Telemetry, error) {
	s, err := readSettings(getenv, defaultService)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	metricsHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	if s.disabled && len(watch) == 0 {
		t, err := New(nil, nil)
		if err != nil {
			return nil, err
		}
		t.MetricsHandler = metricsHandler
		return t, nil
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(append(s.resource, semconv.ServiceName(s.service))...))
	if err != nil {
		return nil, fmt.Errorf("build the OpenTelemetry resource: %w", err)
	}
	var shutdown []func(context.Context) error

	var tp trace.TracerProvider = tracenoop.NewTracerProvider()
	if s.tracesURL != "" {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(s.tracesURL))
		if err != nil {
			return nil, fmt.Errorf("create the OTLP trace exporter for %s: %w", s.tracesURL, err)
		}
		var batch []sdktrace.BatchSpanProcessorOption
		if s.batchDelay > 0 {
			batch = append(batch, sdktrace.WithBatchTimeout(s.batchDelay))
		}
		sdk := NewTracerProvider(append(watching(res, watch), sdktrace.WithBatcher(exp, batch...))...)
		tp, shutdown = sdk, append(shutdown, sdk.Shutdown)
	} else if len(watch) > 0 {
		tp = NewTracerProvider(watching(res, watch)...)
	}

	prom, err := otelprom.New(otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
	if err != nil {
		return nil, fmt.Errorf("create the Prometheus exporter: %w", err)
	}
	readers := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(prom)}
	if s.metricsURL != "" {
		exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(s.metricsURL))
		if err != nil {
			return nil, fmt.Errorf("create the OTLP metric exporter for %s: %w", s.metricsURL, err)
		}
		var periodic []sdkmetric.PeriodicReaderOption
		if s.metricInterval > 0 {
			periodic = append(periodic, sdkmetric.WithInterval(s.metricInterval))
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, periodic...)))
	}
	mp := sdkmetric.NewMeterProvider(readers...)
	shutdown = append(shutdown, mp.Shutdown)

	t, err := New(tp, mp)
	if err != nil {
		return nil, err
	}
	t.MetricsHandler, t.shutdown = metricsHandler, shutdown
	return t, nil
}

// watching returns the provider's options: its resource and, with the
// lab's span processors, every span sampled so that they see it.
func watching(res *resource.Resource, watch []sdktrace.SpanProcessor) []sdktrace.TracerProviderOption {
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, p := range watch {
		opts = append(opts, sdktrace.WithSpanProcessor(p), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	}
	return opts
}

// Shutdown flushes and stops the exporters. Spans still buffered are sent;
// ctx bounds how long that may take.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("flush telemetry: %w", err)
	}
	return nil
}
