package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// With no exporter configured, spans are the no-op's: nothing records, and
// the order id is not even put in the context.
func TestNoExporterMeansNoOpTraces(t *testing.T) {
	tel, err := telemetry.Setup(context.Background(), func(string) string { return "" }, "orderpaid-test")
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	ctx, span := tel.TracerProvider.Tracer("t").Start(context.Background(), "s")
	defer span.End()
	if span.IsRecording() {
		t.Error("span is recording with no exporter configured")
	}
	if telemetry.WithOrderID(ctx, "o1") != ctx {
		t.Error("WithOrderID changed the context with tracing off")
	}
	if tel.MetricsHandler == nil {
		t.Error("no /metrics handler: metrics must be served with traces off too")
	}
}

// A message carries the W3C trace context of the span that wrote it, and the
// span started from it on the other side continues the same trace.
func TestMessageMetadataCarriesTraceContext(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := telemetry.NewTracerProvider(sdktrace.WithSyncer(spans))
	ctx, writer := tp.Tracer("t").Start(context.Background(), "write")
	msg := message.NewMessage("m1", nil)
	telemetry.InjectMessage(ctx, msg)
	writer.End()
	if !strings.HasPrefix(msg.Metadata.Get("traceparent"), "00-"+writer.SpanContext().TraceID().String()) {
		t.Fatalf("metadata %v has no traceparent of the writer's trace", msg.Metadata)
	}
	got := trace.SpanContextFromContext(telemetry.ExtractMessage(context.Background(), msg))
	if got.TraceID() != writer.SpanContext().TraceID() || got.SpanID() != writer.SpanContext().SpanID() || !got.IsRemote() {
		t.Errorf("extracted %v, want the writer's span %v as a remote parent", got, writer.SpanContext())
	}
	if keys := telemetry.MetadataCarrier(msg.Metadata).Keys(); len(keys) != 1 || keys[0] != "traceparent" {
		t.Errorf("Keys() = %v, want [traceparent]", keys)
	}
}

// The order id given once reaches every span started below, and the span
// that was current when it was given.
func TestOrderIDReachesEverySpanBelow(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tr := telemetry.NewTracerProvider(sdktrace.WithSyncer(spans)).Tracer("t")
	ctx, request := tr.Start(context.Background(), "request")
	ctx = telemetry.WithOrderID(ctx, "o-42")
	_, query := tr.Start(ctx, "query")
	query.End()
	request.End()
	for _, s := range spans.GetSpans() {
		found := false
		for _, a := range s.Attributes {
			found = found || (a.Key == telemetry.AttrOrderID && a.Value.AsString() == "o-42")
		}
		if !found {
			t.Errorf("span %q lacks order.id", s.Name)
		}
	}
}

// Every log line written inside a span carries trace_id and span_id; lines
// outside any span carry neither.
func TestLogLinesCarryTraceAndSpanIDs(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(telemetry.NewLogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	ctx, span := telemetry.NewTracerProvider().Tracer("t").Start(context.Background(), "s")
	logger.InfoContext(ctx, "inside")
	span.End()
	logger.InfoContext(context.Background(), "outside")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var inside, outside map[string]any
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &inside) != nil || json.Unmarshal([]byte(lines[1]), &outside) != nil {
		t.Fatalf("log output:\n%s", buf.String())
	}
	if inside["trace_id"] != span.SpanContext().TraceID().String() || inside["span_id"] != span.SpanContext().SpanID().String() {
		t.Errorf("inside the span: %v, want trace_id and span_id of the span", inside)
	}
	if _, ok := outside["trace_id"]; ok {
		t.Errorf("outside any span: %v, want no trace_id", outside)
	}
}
