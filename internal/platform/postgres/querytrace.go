package postgres

import (
	"cmp"
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// queryTracer turns each query into a CLIENT span named after the sqlc query
// ("OrderMarkPaid") or, without one (watermill's SQL, BEGIN), its first
// keyword. Only under a recording span: the polling every 100ms, in no trace,
// makes none, and with tracing off a query costs one context lookup. The
// tracer comes from the parent span, so the pool needs no tracer provider.
type queryTracer struct{}

// TraceQueryStart starts the query's span.
func (queryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx
	}
	name, operation := describeSQL(data.SQL)
	ctx, _ = parent.TracerProvider().Tracer("github.com/orderpaid/orderpaid/internal/platform/postgres").Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			semconv.DBSystemNamePostgreSQL,
			semconv.DBOperationName(operation),
			semconv.DBQuerySummary(name),
			semconv.DBQueryText(data.SQL), // parameterised: values are never in the text
		))
	return ctx
}

// TraceQueryEnd ends it, with the error if any.
func (queryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if data.Err != nil {
		span.RecordError(data.Err)
		span.SetStatus(codes.Error, data.Err.Error())
	} else { // 0 rows from an ON CONFLICT DO NOTHING: a guard's "already applied"
		span.SetAttributes(attribute.Int64("db.rows_affected", data.CommandTag.RowsAffected()))
	}
	span.End()
}

// describeSQL returns a span name and the operation (first keyword) of sql.
// sqlc puts "-- name: OrderMarkPaid :one" on the first line of its queries.
func describeSQL(sql string) (name, operation string) {
	for line := range strings.Lines(sql) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "-- name:"); ok && name == "" {
			name, _, _ = strings.Cut(strings.TrimSpace(rest), " ")
		} else if line != "" && !strings.HasPrefix(line, "--") {
			operation = strings.ToUpper(strings.Trim(strings.Fields(line)[0], ";("))
			break
		}
	}
	return cmp.Or(name, operation), operation
}
