package telemetry

import (
	"context"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/messages"
)

// AttrOrderID is the attribute every span of an order's flow carries, so a
// learner can search Jaeger for one order: order.id=<uuid>.
const AttrOrderID = attribute.Key("order.id")

type orderIDKey struct{}

// WithOrderID returns ctx carrying the order id for every span started under
// it (orderStamper), and sets it on ctx's span, which started before the order
// was known. Outside a recording span it returns ctx unchanged: call it after
// starting one; with tracing off it costs nothing.
func WithOrderID(ctx context.Context, orderID string) context.Context {
	span := trace.SpanFromContext(ctx)
	if orderID == "" || !span.IsRecording() {
		return ctx
	}
	span.SetAttributes(AttrOrderID.String(orderID))
	return context.WithValue(ctx, orderIDKey{}, orderID)
}

// ForOrder names the order run is about, in its record and (WithOrderID) ctx.
func (r *Run) ForOrder(ctx context.Context, orderID uuid.UUID) context.Context {
	r.OrderID = uuid.NullUUID{UUID: orderID, Valid: true}
	return WithOrderID(ctx, orderID.String())
}

// OrderIDFrom returns the order id WithOrderID put in ctx, or "".
func OrderIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(orderIDKey{}).(string)
	return id
}

// WithMessageOrderID is WithOrderID for a message's messages.MetadataOrderID.
func WithMessageOrderID(ctx context.Context, msg *message.Message) context.Context {
	return WithOrderID(ctx, msg.Metadata.Get(messages.MetadataOrderID))
}

// orderStamper is a span processor setting order.id on a span started in a
// context holding one: so query and HTTP client spans carry it too.
type orderStamper struct{}

// OnStart stamps order.id.
func (orderStamper) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	if id := OrderIDFrom(parent); id != "" {
		s.SetAttributes(AttrOrderID.String(id))
	}
}

// OnEnd, Shutdown and ForceFlush do nothing.
func (orderStamper) OnEnd(sdktrace.ReadOnlySpan)      {}
func (orderStamper) Shutdown(context.Context) error   { return nil }
func (orderStamper) ForceFlush(context.Context) error { return nil }

// NewLogHandler wraps h so that a record logged with a span in its context
// carries trace_id and span_id: a log line leads to its trace, and back.
func NewLogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ next slog.Handler }

func (h logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle adds trace_id and span_id when ctx holds a valid span context.
func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs and WithGroup keep the wrapper around the derived handler.
func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{h.next.WithAttrs(attrs)}
}
func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.next.WithGroup(name)} }
