package netfault

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// TestLoseCommitAck runs transactions through the proxy against a real
// PostgreSQL: an unmarked transaction commits normally; the marked one is
// committed on the server while the client's Commit fails; once the count
// is used up, marked transactions commit normally again.
func TestLoseCommitAck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := pgtest.NewDatabase(t)
	if _, err := pool.Exec(ctx, "CREATE TABLE netfault_probe (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	upstream, err := Upstream(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start("postgres", upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	cut, err := p.LoseCommitAck("INSERT 0 1", 1)
	if err != nil {
		t.Fatal(err)
	}
	proxied, err := Via(dbURL, p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	insert := func(conn *pgx.Conn, id int) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO netfault_probe (id) VALUES ($1)", id); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	connect := func() *pgx.Conn {
		conn, err := pgx.Connect(ctx, proxied)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}

	conn := connect()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("a transaction without the marker lost its commit: %v", err)
	}
	if err := insert(conn, 1); err == nil {
		t.Fatal("Commit of the marked transaction succeeded; want the connection cut at its acknowledgement")
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM netfault_probe WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the server has %d rows of the transaction whose acknowledgement was lost, want 1 (committed)", n)
	}
	if err := insert(connect(), 2); err != nil {
		t.Fatalf("a marked transaction after the count was used up: %v", err)
	}
	if got := cut.Cuts(); got != 1 {
		t.Errorf("Cuts() = %d, want 1", got)
	}
}

// msg encodes one server message: type, length, body.
func msg(typ byte, body string) []byte {
	b := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(4+len(body)))
	return append(b, body...)
}

// TestScanWherever the stream is split: the server's messages arrive in
// chunks cut at any byte, and the toxic still finds the COMMIT of the
// marked transaction, forwards exactly what came before it, and leaves
// other transactions alone.
func TestScanWherever(t *testing.T) {
	t.Parallel()
	unmarked := bytes.Join([][]byte{
		msg('C', "BEGIN\x00"), msg('Z', "T"), msg('C', "UPDATE 0\x00"), msg('Z', "T"),
		msg('C', "COMMIT\x00"), msg('Z', "I"),
	}, nil)
	marked := bytes.Join([][]byte{
		msg('C', "BEGIN\x00"), msg('Z', "T"), msg('C', "UPDATE 1\x00"), msg('Z', "T"),
	}, nil)
	commit := msg('C', "COMMIT\x00")
	whole := bytes.Join([][]byte{{'N'}, msg('R', "\x00\x00\x00\x00"), msg('Z', "I"), unmarked, marked, commit, msg('Z', "I")}, nil)
	wantOut := whole[:bytes.LastIndex(whole, commit)]

	for split := 1; split < len(whole); split++ {
		toxic := &CommitAckLost{Marker: "UPDATE 1", Count: 1}
		st := toxic.NewState().(*commitState)
		var out []byte
		var cut bool
		for _, chunk := range [][]byte{whole[:split], whole[split:]} {
			o, c := toxic.scan(st, chunk)
			out = append(out, o...)
			if cut = c; cut {
				break
			}
		}
		if !cut || !bytes.Equal(out, wantOut) {
			t.Fatalf("split at %d: cut=%v, forwarded %d bytes, want the cut after exactly %d bytes", split, cut, len(out), len(wantOut))
		}
	}

	toxic := &CommitAckLost{Marker: "INSERT 0 1"}
	out, cut := toxic.scan(toxic.NewState().(*commitState), whole)
	if cut || !bytes.Equal(out, whole) {
		t.Errorf("no transaction reported the marker: cut=%v, forwarded %d of %d bytes", cut, len(out), len(whole))
	}
}
