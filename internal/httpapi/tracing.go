package httpapi

import (
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// instrument wraps the API in otelhttp: a SERVER span per request that
// continues the caller's W3C trace context, and the http.server.* metrics.
// Probes and /metrics itself are not traced: they would bury the flow.
func (s *server) instrument(h http.Handler) http.Handler {
	if s.Telemetry == nil {
		return h
	}
	return otelhttp.NewHandler(h, "http.server",
		otelhttp.WithTracerProvider(s.Telemetry.TracerProvider),
		otelhttp.WithMeterProvider(s.Telemetry.MeterProvider),
		otelhttp.WithPropagators(telemetry.Propagator()),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return !slices.Contains([]string{"/healthz", "/readyz", "/metrics"}, r.URL.Path)
		}),
	)
}

// nameSpanByRoute names the request's span after its chi route ("GET
// /orders/{id}") and sets http.route on it and the metrics, as the semantic
// conventions ask: otelhttp started the span before routing.
func nameSpanByRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		pattern := chi.RouteContext(r.Context()).RoutePattern()
		if pattern == "" {
			return
		}
		trace.SpanFromContext(r.Context()).SetName(r.Method + " " + pattern)
		trace.SpanFromContext(r.Context()).SetAttributes(semconv.HTTPRoute(pattern))
		if l, ok := otelhttp.LabelerFromContext(r.Context()); ok {
			l.Add(semconv.HTTPRoute(pattern))
		}
	})
}

// withOrderID puts an order route's {id} on the request's spans, so they
// are found by order.id like the rest of the flow.
func withOrderID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, err := uuid.Parse(chi.URLParam(r, "id")); err == nil {
			r = r.WithContext(telemetry.WithOrderID(r.Context(), id.String()))
		}
		next.ServeHTTP(w, r)
	})
}
