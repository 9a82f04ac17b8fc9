package netfault

import (
	"context"
	"errors"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
)

// ErrAnswerLost is what a client reads from a connection LoseAnswers cut.
var ErrAnswerLost = errors.New("netfault: the connection broke as the answer arrived (the statement's answer is lost)")

// LoseAnswers makes cfg's connections lose the answer of the statements
// lose picks, by the span the query tracer started for each: the statement
// reaches the server and is carried out, and the connection is closed under
// the client as the server's answer arrives. For a COMMIT that is the lost
// commit acknowledgement of LoseCommitAck, aimed at one statement of the
// process itself, which lives on (the crash matrix's "lost" cells).
// Install it after the pool's own tracer.
func LoseAnswers(cfg *pgxpool.Config, lose func(trace.SpanID) bool) {
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &answerCutter{Conn: c}, nil
	}
	cfg.ConnConfig.Tracer = losingTracer{next: cfg.ConnConfig.Tracer, lose: lose}
}

// answerCutter is a connection whose next read, once armed, waits for the
// server's answer, throws it away and closes the connection.
type answerCutter struct {
	net.Conn
	armed atomic.Bool
}

func (c *answerCutter) Read(p []byte) (int, error) {
	if !c.armed.Load() {
		return c.Conn.Read(p)
	}
	// Bytes arriving are the answer: the server has done the statement.
	_, _ = c.Conn.Read(p)
	_ = c.Conn.Close()
	return 0, ErrAnswerLost
}

// losingTracer arms the connection of a statement lose picks.
type losingTracer struct {
	next pgx.QueryTracer
	lose func(trace.SpanID) bool
}

func (t losingTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if t.next != nil {
		ctx = t.next.TraceQueryStart(ctx, conn, data)
	}
	if id := trace.SpanContextFromContext(ctx).SpanID(); id.IsValid() && t.lose(id) {
		nc := conn.PgConn().Conn()
		if tc, ok := nc.(interface{ NetConn() net.Conn }); ok { // under TLS
			nc = tc.NetConn()
		}
		if c, ok := nc.(*answerCutter); ok {
			c.armed.Store(true)
		}
	}
	return ctx
}

func (t losingTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	if t.next != nil {
		t.next.TraceQueryEnd(ctx, conn, data)
	}
}
