package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// queryTracer turns each query into a CLIENT span, named after the sqlc query
// ("OrderMarkPaid", "LedgerEntryInsert") or, for SQL without a sqlc name
// (watermill's, BEGIN, COMMIT), after its first keyword.
//
// It makes a span only under a recording span: a query inside a traced
// request or delivery shows in that trace, and the relay's and subscribers'
// polling every 100ms, which belongs to no trace, makes none. With tracing
// off it costs one context lookup per query. The tracer comes from the
// parent span, so the pool needs no tracer provider when it is created.
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
	} else {
		// 0 rows from an INSERT ... ON CONFLICT DO NOTHING is a guard saying
		// "already applied".
		span.SetAttributes(attribute.Int64("db.rows_affected", data.CommandTag.RowsAffected()))
	}
	span.End()
}

// describeSQL returns a span name and the operation (first keyword) of sql.
// sqlc puts "-- name: OrderMarkPaid :one" on the first line of its queries.
func describeSQL(sql string) (name, operation string) {
	for _, line := range strings.Split(sql, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "-- name:"); ok && name == "" {
			if f := strings.Fields(rest); len(f) > 0 {
				name = f[0]
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		if f := strings.Fields(line); len(f) > 0 {
			operation = strings.ToUpper(strings.Trim(f[0], ";("))
		}
		break
	}
	if name == "" {
		name = operation
	}
	return name, operation
}
