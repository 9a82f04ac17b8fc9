// Package telemetry makes the order_paid flow observable: one trace per
// order's journey, from the provider's webhook to the customer's
// notification, with one span per guarded effect saying what its guard
// answered (applied, already_applied, not_applicable); counters of those
// answers; and JSON logs that carry the trace and span ids.
//
// It exists so that a learner can see a duplicate arrive and a guard answer
// it. Everything here is plumbing around the standard OpenTelemetry SDK:
//
//   - setup.go and env.go build the SDK from the standard OTEL_* variables,
//     read through the getenv that run passes in. With no exporter
//     configured, traces are the no-op implementation and cost nothing.
//   - propagation.go is the one place where W3C trace context crosses a
//     hop: watermill's message.Metadata as a TextMapCarrier, the consumer
//     span of every delivery (messaging semantic conventions), and the
//     traced HTTP client of the calls to the providers.
//   - order.go carries the order id in the context and stamps it on every
//     span started under it, so a trace can be found by order; its log
//     handler adds trace_id and span_id to log lines.
//   - step.go is the span and the counters of one guarded step.
//   - metrics.go holds the flow's instruments; gauges.go the operator's
//     gauges read from the database at each scrape.
//
// Spans are started with the TracerProvider of the span already in the
// context wherever there is one (trace.SpanFromContext(ctx).TracerProvider()),
// so code deep in the flow needs no tracer handed to it, and work done
// outside any trace (the relay's polling, a backfill run) makes no spans.
// docs/tracing.md shows the result in Jaeger.
package telemetry
