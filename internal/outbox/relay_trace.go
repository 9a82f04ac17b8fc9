package outbox

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// tracedPublisher sits between the forwarder and the broker. For each
// message it continues the trace the outbox write put in the metadata with a
// PRODUCER span "relay <topic>", writes that span's context into the
// metadata in its place (so the consumer's span is the relay's child), and
// records the lag since the outbox write. A message the relay publishes
// twice (at-least-once) shows as two relay spans under one outbox write.
type tracedPublisher struct {
	next    message.Publisher
	tracer  trace.Tracer
	system  string
	metrics *telemetry.Metrics
}

// newTracedPublisher is out traced and measured as cfg says.
func newTracedPublisher(out message.Publisher, cfg RelayConfig) tracedPublisher {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tracedPublisher{next: out, tracer: tp.Tracer("github.com/orderpaid/orderpaid/internal/outbox"), system: cfg.System, metrics: cfg.Metrics}
}

// Publish relays msgs to topic, one span per message.
func (p tracedPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		if err := p.publish(topic, m); err != nil {
			return err
		}
	}
	return nil
}

func (p tracedPublisher) publish(topic string, m *message.Message) error {
	span := p.startSpan(m.Context(), topic, m)
	defer span.End()
	if err := p.next.Publish(topic, m); err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return err
	}
	return nil
}

// startSpan starts m's span "relay <topic>", continuing the trace the
// outbox write put in its metadata (or ctx's), records the relay lag, and
// writes the span's context into m's metadata and m's context, so that the
// consumer's span is the relay's child. extra are more attributes.
func (p tracedPublisher) startSpan(ctx context.Context, topic string, m *message.Message, extra ...attribute.KeyValue) trace.Span {
	ctx, span := p.tracer.Start(telemetry.ExtractMessage(ctx, m), "relay "+topic,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(telemetry.MessageAttributes(p.system, topic, m)...),
		trace.WithAttributes(semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("relay")),
		trace.WithAttributes(extra...))
	ctx = telemetry.WithMessageOrderID(ctx, m)
	if written, err := time.Parse(time.RFC3339Nano, m.Metadata.Get(MetadataWrittenAt)); err == nil {
		lag := time.Since(written)
		span.SetAttributes(attribute.Float64("outbox.relay.lag_seconds", lag.Seconds()))
		p.metrics.RelayLag(ctx, topic, lag)
	}
	telemetry.InjectMessage(ctx, m)
	m.SetContext(ctx)
	return span
}

// publishBatch relays msgs to topic in one call to the broker, one span per
// message, as Publish traces them one by one.
func (p tracedPublisher) publishBatch(topic string, msgs []*message.Message) error {
	spans := make([]trace.Span, len(msgs))
	for i, m := range msgs {
		spans[i] = p.startSpan(context.Background(), topic, m,
			attribute.Int("messaging.batch.message_count", len(msgs)))
	}
	err := p.next.Publish(topic, msgs...)
	for _, span := range spans {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	return err
}

// Close closes the broker publisher.
func (p tracedPublisher) Close() error { return p.next.Close() }
