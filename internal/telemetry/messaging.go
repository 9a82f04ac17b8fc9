package telemetry

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

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
