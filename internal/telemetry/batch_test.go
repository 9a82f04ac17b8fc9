package telemetry_test

import (
	"context"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// TestStartBatchGivesTheSetItsOwnSpan: in a batch each message keeps the
// "process <topic>" span it has when read alone, a child of the context it
// carries, and the statements for the whole set run under one span of the
// batch's, linked to every message. That batch span is what the crash
// matrix reads a batch's statements from (worker/order_paid_batch/...);
// without it they belonged to no work at all.
func TestStartBatchGivesTheSetItsOwnSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	relay, relaySpan := tp.Tracer("test").Start(context.Background(), "relay order_paid")
	msgs := []*message.Message{message.NewMessage("m1", nil), message.NewMessage("m2", nil)}
	for _, m := range msgs {
		telemetry.InjectMessage(relay, m)
	}
	relaySpan.End()

	end := telemetry.StartBatch(tp, "postgresql", "order_paid", "order_paid_handler", msgs)
	_, set := tp.Tracer("test").Start(telemetry.BatchContext(msgs[0].Context()), "OrderMarkPaidBatch", trace.WithSpanKind(trace.SpanKindClient))
	set.End()
	_, own := tp.Tracer("test").Start(msgs[1].Context(), "POST /notifications", trace.WithSpanKind(trace.SpanKindClient))
	own.End()
	end([]error{nil, nil})

	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	batch, process := byName["process order_paid batch"], byName["process order_paid"]
	if len(batch) != 1 || len(process) != 2 {
		t.Fatalf("spans: %d batch, %d process; want 1 and 2", len(batch), len(process))
	}
	if got := len(batch[0].Links()); got != 2 {
		t.Errorf("the batch span links %d messages, want 2", got)
	}
	if batch[0].Parent().IsValid() {
		t.Error("the batch span has a parent; it belongs to no one message's trace")
	}
	for _, p := range process {
		if p.Parent().SpanID() != relaySpan.SpanContext().SpanID() {
			t.Errorf("a message's span is not a child of the relay's span it carried")
		}
	}
	if s := byName["OrderMarkPaidBatch"][0]; s.Parent().SpanID() != batch[0].SpanContext().SpanID() {
		t.Error("a statement for the set is not under the batch span")
	}
	if s := byName["POST /notifications"][0]; s.Parent().SpanID() != process[1].SpanContext().SpanID() &&
		s.Parent().SpanID() != process[0].SpanContext().SpanID() {
		t.Error("a message's own call is not under its process span")
	}
}

// TestBatchContextOutsideABatchHasNoSpan: a set's statement in a context
// not read in a batch is counted as no message's.
func TestBatchContextOutsideABatchHasNoSpan(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "process order_paid")
	defer span.End()
	if trace.SpanContextFromContext(telemetry.BatchContext(ctx)).IsValid() {
		t.Error("BatchContext kept the message's span")
	}
}
