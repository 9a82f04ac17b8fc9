package telemetry

import (
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

// This file is the whole of "trace context across a hop": a message's (here)
// and an outgoing HTTP call's (HTTPClient, below). There is
// no maintained OpenTelemetry module for watermill; none is needed: a
// message's Metadata is a string map that every broker carries (the SQL
// metadata column, AMQP headers, NATS headers), and a string map with Keys()
// is a propagation.TextMapCarrier.
//
// Where it is used:
//   - outbox.Publish injects the outbox_write span's context into each message
//     BEFORE the forwarder wraps it in its envelope (metadata set on the
//     envelope itself is dropped when the relay unwraps it);
//   - the relay extracts it, starts its span, and injects that span's context
//     in its place;
//   - the consumer middleware (ConsumerMiddleware, below) extracts it and
//     starts the consumer span.

// Propagator is the W3C traceparent/tracestate format, used on every hop:
// HTTP in, HTTP out and messages. Baggage is not propagated: the order id
// travels in the message's own order_id metadata, and nothing of ours leaks
// to external providers.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// MetadataCarrier adapts watermill's message.Metadata to
// propagation.TextMapCarrier.
type MetadataCarrier message.Metadata

// Get returns the value of key, "" when absent.
func (c MetadataCarrier) Get(key string) string { return c[key] }

// Set stores value under key.
func (c MetadataCarrier) Set(key, value string) { c[key] = value }

// Keys lists the keys present.
func (c MetadataCarrier) Keys() []string { return slices.Collect(maps.Keys(c)) }

// InjectMessage writes the trace context of ctx (traceparent, tracestate)
// into msg's metadata. With no valid span in ctx it writes nothing and leaves
// whatever context the message already carries.
func InjectMessage(ctx context.Context, msg *message.Message) {
	if msg.Metadata == nil {
		msg.Metadata = message.Metadata{}
	}
	Propagator().Inject(ctx, MetadataCarrier(msg.Metadata))
}

// ExtractMessage returns ctx with the remote span context carried in msg's
// metadata, to start a child span from.
func ExtractMessage(ctx context.Context, msg *message.Message) context.Context {
	return Propagator().Extract(ctx, MetadataCarrier(msg.Metadata))
}

// HTTPClient returns a client whose calls are CLIENT spans named
// "METHOD /path", children of the span in the request's context, with the
// W3C traceparent header set so the provider can continue the trace (only
// trace context goes out; the order id does not).
//
// It keeps up to 128 idle connections per host: a worker calls the
// provider from a whole batch of handlers at once, and Go's default of 2
// would close and dial again most connections on every call.
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

// MessagingSystem is the messaging.system value of a broker named as in
// BROKER: rabbitmq for amqp, postgresql for postgres, nats for nats.
func MessagingSystem(broker string) string {
	switch broker {
	case "amqp":
		return "rabbitmq"
	case "postgres":
		return "postgresql"
	default:
		return broker
	}
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

// ConsumerMiddleware starts one CONSUMER span per delivery, named
// "process <topic>", for the router's RouterConfig.Outer slot: outside the
// retries, so a delivery retried in-process is one consumer span holding
// several executions.
//
// The span is a CHILD of the context carried in the message (the relay's
// span), not a new trace with a link. One message is processed at a time, so
// the parent is unambiguous, and the whole journey of an order, redeliveries
// included, reads as one trace: each redelivery is one more consumer span
// under the same relay span (or, for a re-forward by the relay, under the
// same outbox write). docs/tracing.md explains the choice.
func ConsumerMiddleware(tp trace.TracerProvider, system string) message.HandlerMiddleware {
	tr := tp.Tracer(tracerName)
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			topic := message.SubscribeTopicFromCtx(msg.Context())
			attrs := append(MessageAttributes(system, topic, msg),
				semconv.MessagingOperationTypeProcess,
				semconv.MessagingOperationName("process"),
				semconv.MessagingConsumerGroupName(message.HandlerNameFromCtx(msg.Context())),
			)
			ctx, span := tr.Start(ExtractMessage(msg.Context(), msg), "process "+topic,
				trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
			defer span.End()
			msg.SetContext(WithMessageOrderID(ctx, msg))

			before := msg.Metadata.Get(middleware.ReasonForPoisonedKey) // set when replayed from the poison queue
			out, err := h(msg)
			switch reason := msg.Metadata.Get(middleware.ReasonForPoisonedKey); {
			case err != nil:
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			case reason != before:
				// PoisonQueue set a new reason and acked the message after
				// storing it aside.
				span.SetAttributes(attribute.Bool("messaging.poisoned", true))
				span.SetStatus(codes.Error, "poisoned: "+reason)
			}
			return out, err
		}
	}
}
