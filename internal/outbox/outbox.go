package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// Topic is the forwarder topic: the outbox table is watermill_outbox.
const Topic = "outbox"

// MetadataWrittenAt is the metadata key holding when a message was written
// to the outbox (RFC 3339), inside the business transaction: the relay
// measures its lag, commit to publish, from it.
const MetadataWrittenAt = "outbox_written_at"

// Publish writes msgs, addressed to topic, into the outbox inside tx. They
// become visible to the relay only when tx commits, and vanish with it when it
// rolls back.
//
// It is traced as a PRODUCER span "outbox_write <topic>" (the message is
// created here; the relay sends it later), and that span's W3C trace context
// is written into each message's metadata before the forwarder wraps the
// message in its envelope. Metadata put on the envelope itself would be lost
// when the relay unwraps it; metadata of the wrapped message travels on.
func Publish(ctx context.Context, tx pgx.Tx, topic string, msgs ...*message.Message) error {
	pub, err := wsql.NewPublisher(wsql.TxFromPgx(tx), wsql.PublisherConfig{
		SchemaAdapter: wsql.DefaultPostgreSQLSchema{},
	}, watermill.NopLogger{})
	if err != nil {
		return fmt.Errorf("create outbox publisher: %w", err)
	}
	ctx, span := startWrite(ctx, topic, msgs)
	defer span.End()
	writtenAt := time.Now().UTC().Format(time.RFC3339Nano)
	for _, m := range msgs {
		telemetry.InjectMessage(ctx, m) // before wrapping: see above
		m.Metadata.Set(MetadataWrittenAt, writtenAt)
		m.Metadata.Set(messages.MetadataOutboxWriteID, watermill.NewUUID())
		m.SetContext(ctx) // the INSERT runs with it: its query span nests here
	}
	fwd := forwarder.NewPublisher(pub, forwarder.PublisherConfig{ForwarderTopic: Topic})
	if err := fwd.Publish(topic, msgs...); err != nil {
		err = fmt.Errorf("write %d message(s) for %s to the outbox: %w", len(msgs), topic, err)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return err
	}
	return nil
}

// startWrite starts the outbox_write span under the span in ctx (none when
// there is none: a backfill run outside any trace).
func startWrite(ctx context.Context, topic string, msgs []*message.Message) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(semconv.MessagingOperationTypeCreate, semconv.MessagingOperationName("outbox_write")),
	}
	if len(msgs) == 1 {
		opts = append(opts, trace.WithAttributes(telemetry.MessageAttributes("outbox", topic, msgs[0])...))
	} else {
		opts = append(opts, trace.WithAttributes(semconv.MessagingSystemKey.String("outbox"),
			semconv.MessagingDestinationName(topic), semconv.MessagingBatchMessageCount(len(msgs))))
	}
	ctx, span := telemetry.TracerFrom(ctx).Start(ctx, "outbox_write "+topic, opts...)
	if len(msgs) > 0 {
		ctx = telemetry.WithMessageOrderID(ctx, msgs[0])
	}
	return ctx, span
}
