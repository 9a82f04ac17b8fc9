package outbox_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A keepalive that comes while the relay is inside a transaction (between
// its BEGIN and COMMIT: the server sends one when a large transaction's
// rows fill the socket for longer than half its wal_sender_timeout)
// carries the server's position, already past that transaction's commit.
// The relay must not confirm it: a relay stopped before the COMMIT reads
// the transaction again from the slot and publishes every row. This kills
// the mutant that drops `!rd.d.inTx &&` in LogicalRelay.take: the relay
// confirms the keepalive's position, and when it comes back the slot starts
// past the transaction, whose rows are never published.
//
// The server sends such a keepalive only under load, so a proxy between
// the relay and the server plays it: it passes the stream on up to the
// transaction's first insert, then sends a keepalive at the server's
// position after the commit, asking for a reply, and passes nothing more
// to the relay. The relay is stopped once its reply reached the server,
// and started again straight on the server. The slot is the test
// database's own, dropped at the end even when the test fails.
func TestLogicalRelayConfirmsNoKeepaliveInsideATransaction(t *testing.T) {
	t.Parallel()
	pool := logicalDatabase(t)
	dropSlotAtEnd(t, pool)
	var ids []string
	if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		for range 3 {
			ids = append(ids, confirmationIn(t, tx))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var after string
	if err := pool.QueryRow(t.Context(), `SELECT pg_current_wal_lsn()::text`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	walEnd, err := pglogrepl.ParseLSN(after)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startKeepaliveProxy(t, pool, walEnd)
	out := &recorder{}
	stop := startLogical(t, proxy.pool, out, nil)
	select {
	case <-proxy.replied:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not answer the keepalive within 10s")
	}
	stop()
	proxy.close()
	if got := out.published(); len(got) != 0 {
		t.Fatalf("published %v before the COMMIT reached the relay", got)
	}

	startLogical(t, pool, out, nil)
	if got := waitPublished(t, out, ids...); !slices.Equal(got, ids) {
		t.Errorf("published %v, want %v: the transaction's rows, once each", got, ids)
	}
}

// keepaliveProxy stands between a logical relay and the server. It passes
// every message on until the first insert of the replication stream, then
// sends the relay a keepalive at walEnd that asks for a reply, and from
// then on passes nothing more from the server. replied is closed once the
// relay's next status update has been passed on to the server.
type keepaliveProxy struct {
	pool     *pgxpool.Pool // the test database, through the proxy
	replied  chan struct{}
	walEnd   pglogrepl.LSN
	server   string
	ln       net.Listener
	injected atomic.Bool
	once     sync.Once
	mu       sync.Mutex
	conns    []net.Conn
}

// startKeepaliveProxy starts a keepaliveProxy in front of pool's server,
// stopped when the test ends.
func startKeepaliveProxy(t *testing.T, pool *pgxpool.Pool, walEnd pglogrepl.LSN) *keepaliveProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := pool.Config().Copy()
	p := &keepaliveProxy{replied: make(chan struct{}), walEnd: walEnd, ln: ln,
		server: net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))}
	cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Fallbacks = "127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port), nil
	cfg.MinConns = 0
	if p.pool, err = pgxpool.NewWithConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	t.Cleanup(p.pool.Close)
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(client)
		}
	}()
	return p
}

// close stops the proxy and cuts every connection through it.
func (p *keepaliveProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

func (p *keepaliveProxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.server)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, client, server)
	p.mu.Unlock()
	go func() { // the relay to the server: the startup message, then typed ones
		r := bufio.NewReader(client)
		startup := true
		for {
			typ, msg, err := readMessage(r, startup)
			if err != nil {
				return
			}
			startup = false
			if _, err := server.Write(msg); err != nil {
				return
			}
			if typ == 'd' && len(msg) > 5 && msg[5] == 'r' && p.injected.Load() { // a standby status update
				p.once.Do(func() { close(p.replied) })
			}
		}
	}()
	r := bufio.NewReader(server)
	for {
		typ, msg, err := readMessage(r, false)
		if err != nil {
			return
		}
		if p.injected.Load() {
			continue // the COMMIT and all after it never reach the relay
		}
		if _, err := client.Write(msg); err != nil {
			return
		}
		// XLogData ('w', start, end, clock) whose pgoutput message is an insert.
		if typ == 'd' && len(msg) > 5+25 && msg[5] == 'w' && msg[5+25] == 'I' {
			p.injected.Store(true)
			keepalive := []byte{'d', 0, 0, 0, 4 + 18, 'k'}
			keepalive = binary.BigEndian.AppendUint64(keepalive, uint64(p.walEnd))
			keepalive = binary.BigEndian.AppendUint64(keepalive, uint64(time.Since(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Microseconds()))
			keepalive = append(keepalive, 1) // reply requested
			if _, err := client.Write(keepalive); err != nil {
				return
			}
		}
	}
}

// readMessage reads one message of the PostgreSQL protocol and returns its
// type and all its bytes; the startup message has no type (0).
func readMessage(r io.Reader, startup bool) (typ byte, msg []byte, err error) {
	head := make([]byte, 5)
	if startup {
		head = head[:4]
	}
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, nil, err
	}
	if !startup {
		typ = head[0]
	}
	n := int(binary.BigEndian.Uint32(head[len(head)-4:])) - 4
	msg = append(head, make([]byte, n)...)
	_, err = io.ReadFull(r, msg[len(head):])
	return typ, msg, err
}

// dropSlotAtEnd drops the slot of pool's database when the test ends,
// passed or failed: a failed test keeps its database, and a slot kept with
// it would hold the server's WAL. It runs after the relays the test starts
// later have stopped.
func dropSlotAtEnd(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		for range 20 {
			_, _ = pool.Exec(ctx, `SELECT pg_terminate_backend(active_pid, 5000) FROM pg_replication_slots WHERE database = current_database() AND active_pid IS NOT NULL`)
			_, _ = pool.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database() AND NOT active`)
			var left int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_replication_slots WHERE database = current_database()`).Scan(&left); err == nil && left == 0 {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Error("the slot of the test's database is left: drop it with pg_drop_replication_slot")
	})
}
