package telemetry

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// StartBatch starts the spans of one batch of topic read by group
// (CONSUMER_BATCH_SIZE > 1), the batch's twin of ConsumerMiddleware:
//
//   - for each message, the "process <topic>" CONSUMER span a message read
//     alone gets, a child of the context the message carries, so its steps,
//     its provider calls and its redeliveries read as one trace, as in
//     per-message mode;
//   - for the batch, a CONSUMER span "process <topic> batch", linked to every
//     message's span: the statements that act on the whole set (one
//     transaction, the up-front locks, the set forms of the guards) belong to
//     no one message, and run under it (BatchContext).
//
// Each message's context is replaced by one holding both. end ends the
// spans once the handler has answered, each message's with its answer.
func StartBatch(tp trace.TracerProvider, system, topic, group string, msgs []*message.Message) (end func(errs []error)) {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	tr := tp.Tracer(tracerName)
	spans := make([]trace.Span, len(msgs))
	links := make([]trace.Link, len(msgs))
	for i, m := range msgs {
		spans[i] = startProcess(tr, system, topic, group, m)
		links[i] = trace.Link{SpanContext: spans[i].SpanContext()}
	}
	_, batch := tr.Start(context.Background(), "process "+topic+" batch",
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String(system),
			semconv.MessagingDestinationName(topic),
			semconv.MessagingConsumerGroupName(group),
			semconv.MessagingBatchMessageCount(len(msgs)),
		))
	for _, m := range msgs {
		m.SetContext(context.WithValue(m.Context(), batchKey{}, batch))
	}
	return func(errs []error) {
		for i, s := range spans {
			if i < len(errs) && errs[i] != nil {
				s.RecordError(errs[i])
				s.SetStatus(codes.Error, errs[i].Error())
			}
			s.End()
		}
		batch.End()
	}
}

type batchKey struct{}

// BatchContext is ctx (a message's of a batch) with the batch's span
// current in place of the message's: the context of a statement for the
// whole set. For a message not read in a batch, ctx with no span at all,
// so that such a statement is never counted as one message's.
func BatchContext(ctx context.Context) context.Context {
	if batch, ok := ctx.Value(batchKey{}).(trace.Span); ok {
		return trace.ContextWithSpan(ctx, batch)
	}
	return trace.ContextWithSpanContext(ctx, trace.SpanContext{})
}
