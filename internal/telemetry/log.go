package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// NewLogHandler wraps h so that every record logged with a context holding a
// span (logger.InfoContext(ctx, ...)) carries trace_id and span_id: a log
// line leads to its trace, and a trace to its log lines.
func NewLogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ next slog.Handler }

// Enabled defers to the wrapped handler.
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

// WithAttrs keeps the wrapper around the derived handler.
func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{h.next.WithAttrs(attrs)}
}

// WithGroup keeps the wrapper around the derived handler.
func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{h.next.WithGroup(name)}
}
