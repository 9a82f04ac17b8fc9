package telemetry

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/propagation"
)

// This file is the whole of "trace context across a message hop". There is
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
//   - the consumer middleware extracts it and starts the consumer span.

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
func (c MetadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

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
