package telemetry

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// This file is the whole of "trace context across a hop", a message's and an
// HTTP call's. watermill needs no OpenTelemetry module: a message's Metadata,
// carried by every broker, is a string map, and with Keys() a TextMapCarrier.
// outbox.Publish injects the outbox write's span context before the forwarder
// wraps the message (the envelope's own metadata is dropped on unwrapping);
// the relay extracts it and injects its own span's; ConsumerMiddleware
// extracts that and starts the consumer span.

// Propagator is W3C trace context, on every hop. Baggage is not propagated:
// the order id travels in the message's metadata, and nothing of ours leaks
// to external providers.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// MetadataCarrier adapts message.Metadata to propagation.TextMapCarrier
// (Get, Set, Keys).
type MetadataCarrier message.Metadata

func (c MetadataCarrier) Get(key string) string { return c[key] }
func (c MetadataCarrier) Set(key, value string) { c[key] = value }
func (c MetadataCarrier) Keys() []string        { return slices.Collect(maps.Keys(c)) }

// InjectMessage writes ctx's trace context into msg's metadata; with no valid
// span in ctx it leaves whatever the message carries.
func InjectMessage(ctx context.Context, msg *message.Message) {
	if msg.Metadata == nil {
		msg.Metadata = message.Metadata{}
	}
	Propagator().Inject(ctx, MetadataCarrier(msg.Metadata))
}

// ExtractMessage returns ctx with the span context msg's metadata carries.
func ExtractMessage(ctx context.Context, msg *message.Message) context.Context {
	return Propagator().Extract(ctx, MetadataCarrier(msg.Metadata))
}

// HTTPClient returns a client whose calls are CLIENT spans, "METHOD /path",
// sending traceparent (and not the order id) so the provider can continue
// the trace. It keeps 128 idle connections per host: a worker calls from a
// whole batch of handlers at once, and Go's default of 2 would redial most.
func (t *Telemetry) HTTPClient(timeout time.Duration) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 128
	return &http.Client{
		Timeout: timeout,
		Transport: otelhttp.NewTransport(base,
			otelhttp.WithTracerProvider(t.TracerProvider),
			otelhttp.WithMeterProvider(t.MeterProvider),
			otelhttp.WithPropagators(Propagator()),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }),
		),
	}
}

// MessagingSystem is the messaging.system value of a broker named as in BROKER.
func MessagingSystem(broker string) string {
	return cmp.Or(map[string]string{"amqp": "rabbitmq", "postgres": "postgresql"}[broker], broker)
}

// MessageAttributes are the messaging semantic-convention attributes of one
// message on one destination.
func MessageAttributes(system, topic string, msg *message.Message) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.MessagingSystemKey.String(system),
		semconv.MessagingDestinationName(topic),
		semconv.MessagingMessageID(msg.UUID),
	}
}

// ConsumerMiddleware starts one CONSUMER span per delivery, "process
// <topic>", for RouterConfig.Outer: outside the retries, so one span holds a
// delivery's executions. It is a CHILD of the relay's span the message
// carries, not a linked new trace: one message at a time makes the parent
// unambiguous, and an order's journey, redeliveries included, reads as one
// trace (docs/tracing.md).
func ConsumerMiddleware(tp trace.TracerProvider, system string) message.HandlerMiddleware {
	tr := tp.Tracer(tracerName)
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			topic := message.SubscribeTopicFromCtx(msg.Context())
			span := startProcess(tr, system, topic, message.HandlerNameFromCtx(msg.Context()), msg)
			defer span.End()

			before := msg.Metadata.Get(middleware.ReasonForPoisonedKey) // set when replayed from the poison queue
			out, err := h(msg)
			switch reason := msg.Metadata.Get(middleware.ReasonForPoisonedKey); {
			case err != nil:
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			case reason != before: // PoisonQueue stored it aside, and acked it
				span.SetAttributes(attribute.Bool("messaging.poisoned", true))
				span.SetStatus(codes.Error, "poisoned: "+reason)
			}
			return out, err
		}
	}
}

// startProcess starts msg's CONSUMER span "process <topic>", a child of the
// context the message carries, and puts it (and the order id) in the
// message's context: a delivery's span, read alone or in a batch.
func startProcess(tr trace.Tracer, system, topic, group string, msg *message.Message) trace.Span {
	attrs := append(MessageAttributes(system, topic, msg),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingConsumerGroupName(group),
	)
	ctx, span := tr.Start(ExtractMessage(msg.Context(), msg), "process "+topic,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
	msg.SetContext(WithMessageOrderID(ctx, msg))
	return span
}
