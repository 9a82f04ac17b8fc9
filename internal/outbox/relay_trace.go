package outbox

import (
	"cmp"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// tracedPublisher, between the forwarder and the broker, continues each
// message's trace with a PRODUCER span "relay <topic>", whose context replaces
// the outbox write's in the metadata (the consumer's span is its child), and
// records the lag since the write. A message relayed twice shows as two
// relay spans under one outbox write.
type tracedPublisher struct {
	next    message.Publisher
	tracer  trace.Tracer
	system  string
	metrics *telemetry.Metrics
}

// newTracedPublisher is out traced and measured as cfg says.
func newTracedPublisher(out message.Publisher, cfg RelayConfig) tracedPublisher {
	tp := cmp.Or[trace.TracerProvider](cfg.TracerProvider, noop.NewTracerProvider())
	return tracedPublisher{next: out, tracer: tp.Tracer("github.com/orderpaid/orderpaid/internal/outbox"), system: cfg.System, metrics: cfg.Metrics}
}

// Publish relays msgs to topic one by one.
func (p tracedPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		if err := p.publishBatch(topic, []*message.Message{m}); err != nil {
			return err
		}
	}
	return nil
}

// publishBatch relays msgs to topic in one call, one span per message.
func (p tracedPublisher) publishBatch(topic string, msgs []*message.Message) error {
	spans := make([]trace.Span, len(msgs))
	for i, m := range msgs {
		ctx, span := p.tracer.Start(telemetry.ExtractMessage(m.Context(), m), "relay "+topic,
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(telemetry.MessageAttributes(p.system, topic, m)...),
			trace.WithAttributes(semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("relay")))
		if len(msgs) > 1 {
			span.SetAttributes(attribute.Int("messaging.batch.message_count", len(msgs)))
		}
		ctx = telemetry.WithMessageOrderID(ctx, m)
		if written, err := time.Parse(time.RFC3339Nano, m.Metadata.Get(MetadataWrittenAt)); err == nil {
			lag := time.Since(written)
			span.SetAttributes(attribute.Float64("outbox.relay.lag_seconds", lag.Seconds()))
			p.metrics.RelayLag(ctx, topic, lag)
		}
		telemetry.InjectMessage(ctx, m)
		m.SetContext(ctx)
		spans[i] = span
	}
	err := p.next.Publish(topic, msgs...)
	for _, span := range spans {
		telemetry.EndSpan(span, err)
	}
	return err
}

// Close closes the broker publisher.
func (p tracedPublisher) Close() error { return p.next.Close() }
