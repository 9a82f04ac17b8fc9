package fault_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// work plays one delivery of order_paid as the worker's spans show it: the
// delivery's span, an effect step (internal: not a boundary), two
// statements under it, a COMMIT, and a second BEGIN. crashed is set by the
// crash function, and a crash stops the work there, as the process would.
// It returns the statements whose answer the work got.
func work(tp *sdktrace.TracerProvider, crashed *bool) (answered []string) {
	tr := tp.Tracer("test")
	ctx, root := tr.Start(context.Background(), "process order_paid", trace.WithSpanKind(trace.SpanKindConsumer))
	defer func() {
		if !*crashed {
			root.End()
		}
	}()
	stepCtx, step := tr.Start(ctx, "effect paid")
	for _, name := range []string{"BEGIN", "OrderMarkPaid", "COMMIT", "BEGIN"} {
		_, q := tr.Start(stepCtx, name, trace.WithSpanKind(trace.SpanKindClient))
		if *crashed {
			return
		}
		answered = append(answered, name) // the answer is in; End is the process taking it
		q.End()
		if *crashed {
			return
		}
	}
	step.End()
	return answered
}

func TestBoundariesAreNamedByWorkSpanAndCount(t *testing.T) {
	var rec bytes.Buffer
	b := fault.NewBoundaries("worker", &rec)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	crashed := false
	work(tp, &crashed)
	want := "worker/order_paid/BEGIN#1\nworker/order_paid/OrderMarkPaid#1\nworker/order_paid/COMMIT#1\nworker/order_paid/BEGIN#2\nworker/order_paid/end#1\n"
	if rec.String() != want {
		t.Errorf("boundaries met:\n%s\nwant:\n%s", rec.String(), want)
	}
}

func TestCrashAtFiresOnItsSideOnly(t *testing.T) {
	for _, tt := range []struct {
		spec, lastMet string
		answered      int // statements answered before the crash
	}{
		{"worker/order_paid/COMMIT#1:before", "worker/order_paid/COMMIT#1", 2},
		{"worker/order_paid/COMMIT#1:after", "worker/order_paid/COMMIT#1", 3}, // its answer came, the work never acted on it
		{"worker/order_paid/BEGIN#2", "worker/order_paid/BEGIN#2", 3},         // before by default
		{"worker/order_paid/end#1", "worker/order_paid/end#1", 4},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			var rec bytes.Buffer
			b := fault.NewBoundaries("worker", &rec)
			crashed, crashes := false, 0
			if err := b.CrashAt(tt.spec, func() { crashed = true; crashes++ }); err != nil {
				t.Fatal(err)
			}
			answered := work(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b)), &crashed)
			met := strings.Split(strings.TrimSpace(rec.String()), "\n")
			if crashes != 1 || met[len(met)-1] != tt.lastMet || len(answered) != tt.answered {
				t.Errorf("crashes %d, last boundary met %q, answered %v; want 1 crash at %q after %d answers",
					crashes, met[len(met)-1], answered, tt.lastMet, tt.answered)
			}
		})
	}
}

func TestCrashAtRefusesAMalformedBoundary(t *testing.T) {
	b := fault.NewBoundaries("api", nil)
	for _, spec := range []string{"COMMIT", "api/COMMIT#1", "api/pay/COMMIT#1:during", "api/pay/COMMIT", "api/pay/OrderGet#1:lost"} {
		if err := b.CrashAt(spec, func() {}); err == nil {
			t.Errorf("CrashAt(%q) accepted", spec)
		}
	}
}

// A request's work is named after its path without the ids in it.
func TestRequestWorkNamedAfterItsPath(t *testing.T) {
	var rec bytes.Buffer
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(fault.NewBoundaries("api", &rec)))
	tr := tp.Tracer("test")
	for _, r := range []struct{ method, path string }{
		{"POST", "/orders/6f1c2a52-8d0e-4a8a-9a51-1f3b7c1d2e4f/payments"},
		{"GET", "/orders/6f1c2a52-8d0e-4a8a-9a51-1f3b7c1d2e4f/audit"},
	} {
		ctx, root := tr.Start(context.Background(), r.method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("url.path", r.path)))
		_, q := tr.Start(ctx, "OrderGet", trace.WithSpanKind(trace.SpanKindClient))
		q.End()
		root.End()
	}
	want := "api/orders_payments/OrderGet#1\napi/orders_payments/end#1\napi/get_orders_audit/OrderGet#1\napi/get_orders_audit/end#1\n"
	if rec.String() != want {
		t.Errorf("boundaries met:\n%s\nwant:\n%s", rec.String(), want)
	}
}

// A COMMIT armed to lose its answer is picked once, by its span, and never
// crashes the process: the work goes on past it.
func TestLoseAnswerPicksTheArmedCommitOnce(t *testing.T) {
	var rec bytes.Buffer
	b := fault.NewBoundaries("worker", &rec)
	crashed := false
	if err := b.CrashAt("worker/order_paid/COMMIT#1:lost", func() { crashed = true }); err != nil {
		t.Fatal(err)
	}
	var picked []string
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	ctx, root := tp.Tracer("test").Start(context.Background(), "process order_paid", trace.WithSpanKind(trace.SpanKindConsumer))
	for _, name := range []string{"BEGIN", "COMMIT", "BEGIN", "COMMIT"} {
		_, q := tp.Tracer("test").Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
		if b.LoseAnswer(q.SpanContext().SpanID()) {
			picked = append(picked, name)
		}
		q.End()
	}
	root.End()
	if crashed || len(picked) != 1 || picked[0] != "COMMIT" {
		t.Errorf("picked %v, crashed %v; want the first COMMIT once, no crash", picked, crashed)
	}
	if !strings.Contains(rec.String(), fault.AnswerLost) || !strings.HasSuffix(rec.String(), "worker/order_paid/end#1\n") {
		t.Errorf("record:\n%s\nwant the answer lost, and the work on to its end", rec.String())
	}
}
