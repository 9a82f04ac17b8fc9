package netfault

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// TestLoseAnswersCutsTheArmedCommitOnly runs three transactions of one
// delivery on a pool with LoseAnswers, aimed by a fault.Boundaries armed at
// the second COMMIT's lost answer, against a real PostgreSQL. The first and
// third commit as usual; the second is committed on the server while the
// client's Commit fails, and the record says the answer was lost. With the
// connection not cut (LoseAnswers left out), the second Commit succeeds and
// the test fails.
func TestLoseAnswersCutsTheArmedCommitOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dbURL := pgtest.NewDatabase(t)
	var rec bytes.Buffer
	b := fault.NewBoundaries("test", &rec)
	if err := b.CrashAt("test/probe/COMMIT#2:lost", func() { t.Error("a lost answer must not crash the process") }); err != nil {
		t.Fatal(err)
	}
	pool, err := postgres.Connect(ctx, dbURL, func(cfg *pgxpool.Config) { LoseAnswers(cfg, b.LoseAnswer) })
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE TABLE answer_probe (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	defer tp.Shutdown(ctx)
	ctx, delivery := tp.Tracer("test").Start(ctx, "process probe", trace.WithSpanKind(trace.SpanKindConsumer))
	var errs []error
	for id := 1; id <= 3; id++ {
		errs = append(errs, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO answer_probe VALUES ($1)", id)
			return err
		}))
	}
	delivery.End()

	if errs[0] != nil || errs[2] != nil {
		t.Errorf("the unarmed commits failed: %v, %v", errs[0], errs[2])
	}
	if errs[1] == nil {
		t.Error("the armed COMMIT answered: its answer was not lost")
	}
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM answer_probe").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d rows committed, want 3: the COMMIT whose answer was lost is durable all the same", n)
	}
	if !strings.Contains(rec.String(), fault.AnswerLost) {
		t.Errorf("the record does not say the answer was lost:\n%s", rec.String())
	}
}
