package fault

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Boundaries are the places a process can die, read from its own spans
// rather than named by hand: every SQL statement (the query tracer names it
// after its sqlc query, or BEGIN, COMMIT, INSERT for SQL of its own), every
// provider call (the HTTP client's span, "POST /charges"), every publish,
// and the end of each delivery or request (the handler has returned; the
// broker's ack or the answer is next). The crash matrix (internal/lab) runs
// a flow once to list them, then once per boundary with a crash there.
//
// A boundary's name is stable across runs:
//
//	process/flow/span#n     worker/order_paid/OrderMarkPaid#1
//
// flow is the span that began the work in this process (a delivery, a
// request), span the boundary's span name, and n counts that name within
// the work, from 1. The end of the work is "end#1".
//
// A *Boundaries is an OpenTelemetry span processor: it sees each span start
// (the statement is about to be sent) and end (its answer has come back).
type Boundaries struct {
	process string
	record  io.Writer // each boundary met, one name per line; nil: none

	crash     func()
	crashAt   string // the boundary to crash at; "" none
	crashWhen When
	lost      bool // the Lost side has fired

	mu    sync.Mutex
	spans map[trace.SpanID]span // each open span of this process
}

// span is an open span: its work and, for a boundary, its name.
type span struct {
	work     *work
	boundary string
}

// When is the side of a boundary a crash falls on.
type When string

// Crash sides.
const (
	// Before: the process dies before the statement or call is sent.
	Before When = "before"
	// After: it dies once the answer came back, before acting on it. For a
	// COMMIT that is a commit the server made and the process never
	// learned of; for a provider call, a call the provider acted on.
	After When = "after"
	// Lost, for a COMMIT only: the server commits, and its answer is lost
	// on the way (the connection breaks under it); the process lives on,
	// sees an error for a durable commit, and goes on as it would after one
	// (LoseAnswer picks the statement, the lab's connections cut it).
	Lost When = "lost"
)

// AnswerLost, in a boundary record, says the armed COMMIT's answer was cut.
const AnswerLost = "@@ answer lost"

// work is one unit of work in this process: a delivery or a request.
type work struct {
	flow  string
	root  trace.SpanID
	count map[string]int
}

// NewBoundaries returns the span processor of process ("api", "worker").
// record, when not nil, receives each boundary met, one per line, and each
// guard's already_applied ("@state_check=already_applied").
func NewBoundaries(process string, record io.Writer) *Boundaries {
	return &Boundaries{process: process, record: record, spans: map[trace.SpanID]span{}}
}

// CrashAt arms a crash at spec, "boundary" or "boundary:before|after"
// (default before). It fires once: the restarted process is a new one.
func (b *Boundaries) CrashAt(spec string, crash func()) error {
	name, when := spec, Before
	if i := strings.LastIndex(spec, ":"); i > 0 {
		name, when = spec[:i], When(spec[i+1:])
	}
	if when != Before && when != After && when != Lost {
		return fmt.Errorf("crash at %q: the side must be before, after or (a COMMIT's) lost", spec)
	}
	if strings.Count(name, "/") < 2 || !strings.Contains(name, "#") {
		return fmt.Errorf("crash at %q: want process/flow/span#n, as `orderpaid-lab crashmatrix --list` prints them", spec)
	}
	if when == Lost && !IsCommit(name) {
		return fmt.Errorf("crash at %q: only a COMMIT's answer can be lost", spec)
	}
	b.crashAt, b.crashWhen, b.crash = name, when, crash
	return nil
}

// IsCommit says whether boundary is a COMMIT (".../COMMIT#n"), the one
// statement whose answer can be lost (Lost).
func IsCommit(boundary string) bool {
	i := strings.LastIndex(boundary, "/")
	return strings.HasPrefix(boundary[i+1:], "COMMIT#")
}

// LoseAnswer says whether the statement of span id is the COMMIT armed to
// lose its answer, once (the lab's connection then cuts it), and records
// AnswerLost.
func (b *Boundaries) LoseAnswer(id trace.SpanID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.crashWhen != Lost || b.lost || b.crashAt == "" || b.spans[id].boundary != b.crashAt {
		return false
	}
	b.lost = true
	if b.record != nil {
		fmt.Fprintln(b.record, AnswerLost)
	}
	return true
}

// OnStart names the span's boundary and crashes before it if armed.
func (b *Boundaries) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	name, ok := b.begin(s)
	if !ok {
		return
	}
	if b.record != nil {
		fmt.Fprintln(b.record, name)
	}
	b.fire(name, Before)
}

// OnEnd crashes after the span's boundary if armed, and forgets a finished
// work.
func (b *Boundaries) OnEnd(s sdktrace.ReadOnlySpan) {
	b.mu.Lock()
	sp, ok := b.spans[s.SpanContext().SpanID()]
	delete(b.spans, s.SpanContext().SpanID())
	b.mu.Unlock()
	if !ok {
		return
	}
	b.recordAnswer(s)
	if w := sp.work; w.root == s.SpanContext().SpanID() {
		// The work's end: the handler returned, the ack or answer is next.
		name := b.process + "/" + w.flow + "/end#1"
		if b.record != nil {
			fmt.Fprintln(b.record, name)
		}
		b.fire(name, Before)
		return
	}
	if sp.boundary != "" {
		b.fire(sp.boundary, After)
	}
}

// begin registers s under its work and returns its boundary name, if it is
// one: a span started under no span of this process begins a work.
func (b *Boundaries) begin(s sdktrace.ReadWriteSpan) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, parent := s.SpanContext().SpanID(), s.Parent()
	up, ok := b.spans[parent.SpanID()]
	w := up.work
	if !parent.IsValid() || parent.IsRemote() || !ok {
		w = &work{flow: flowName(s), root: id, count: map[string]int{}}
	}
	sp := span{work: w}
	if id != w.root && boundaryKind(s.SpanKind()) {
		w.count[s.Name()]++
		sp.boundary = b.process + "/" + w.flow + "/" + s.Name() + "#" + strconv.Itoa(w.count[s.Name()])
	}
	b.spans[id] = sp
	return sp.boundary, sp.boundary != ""
}

// recordAnswer records a guard's "already_applied" (a step span's
// idempotency.outcome, telemetry.AttrOutcome) as "@technique=outcome": what
// absorbed a repeat after a crash (already_applied), for the crash
// matrix's cells.
func (b *Boundaries) recordAnswer(s sdktrace.ReadOnlySpan) {
	if b.record == nil {
		return
	}
	var technique, outcome string
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case "idempotency.technique":
			technique = kv.Value.AsString()
		case "idempotency.outcome":
			outcome = kv.Value.AsString()
		}
	}
	if technique != "" && outcome == "already_applied" {
		fmt.Fprintf(b.record, "@%s=%s\n", technique, outcome)
	}
}

func (b *Boundaries) fire(name string, when When) {
	if b.crash != nil && b.crashAt == name && b.crashWhen == when {
		b.crash()
	}
}

// boundaryKind: statements, calls and publishes are boundaries; the flow's
// own step spans (internal) are not.
func boundaryKind(k trace.SpanKind) bool {
	return k == trace.SpanKindClient || k == trace.SpanKindProducer
}

// flowName is the work's name in a boundary, from the span that began it: a
// delivery's topic ("process order_paid" -> "order_paid"; "relay
// order_paid" -> "relay_order_paid"), a request's path without its ids
// ("POST /orders/{id}/payments" -> "orders_payments", "GET ..." ->
// "get_orders_audit").
func flowName(s sdktrace.ReadWriteSpan) string {
	if s.SpanKind() != trace.SpanKindServer {
		return strings.ReplaceAll(strings.TrimPrefix(s.Name(), "process "), " ", "_")
	}
	var parts []string
	if method := strings.Fields(s.Name()); len(method) > 0 && method[0] != "POST" {
		parts = append(parts, strings.ToLower(method[0]))
	}
	for _, kv := range s.Attributes() {
		if kv.Key != "url.path" {
			continue
		}
		for _, seg := range strings.Split(kv.Value.AsString(), "/") {
			if seg != "" && uuid.Validate(seg) != nil {
				parts = append(parts, seg)
			}
		}
	}
	return strings.Join(parts, "_")
}

// Shutdown implements sdktrace.SpanProcessor.
func (b *Boundaries) Shutdown(context.Context) error { return nil }

// ForceFlush implements sdktrace.SpanProcessor.
func (b *Boundaries) ForceFlush(context.Context) error { return nil }
