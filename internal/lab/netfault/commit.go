package netfault

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// commitAckLostType is the toxic's type name in toxiproxy's registry.
const commitAckLostType = "commit_ack_lost"

// maxMessage bounds the length a server message may claim before the
// stream counts as unreadable (TLS, or not PostgreSQL): then the toxic
// passes everything through untouched.
const maxMessage = 1 << 30

// CommitAckLost is a toxiproxy toxic for the server-to-client stream of a
// PostgreSQL connection: the timeout that leaves partial state, at the
// database. It reads the server's messages, each a type byte and a length,
// and when the server acknowledges a COMMIT (CommandComplete, tag "COMMIT")
// of a chosen transaction, it forwards what came before and closes the
// connection instead of forwarding the acknowledgement. The transaction is
// durable; the client's Commit fails with a broken connection, and a client
// that retries runs the same work again on top of its own committed first
// attempt.
//
// One toxic serves every connection of its proxy: the count of cuts is
// shared, each connection's reading state is its own (NewState).
type CommitAckLost struct {
	// Marker is the command tag that marks a transaction to cut, such as
	// "UPDATE 1" (the transaction updated one row in one statement); empty
	// marks every transaction. A transaction ends at a ReadyForQuery that
	// says idle.
	Marker string `json:"marker"`
	// Count is how many acknowledgements to lose, over all connections;
	// 0 loses every one.
	Count int64 `json:"count"`

	cuts atomic.Int64
}

// commitState is what the toxic knows about one connection.
type commitState struct {
	started bool   // the first byte has been seen
	held    []byte // the start of a message not yet complete, held back
	marked  bool   // the current transaction reported Marker
	opaque  bool   // not readable as PostgreSQL messages: pass through
}

// Cuts is how many acknowledgements the toxic has lost so far.
func (t *CommitAckLost) Cuts() int64 { return t.cuts.Load() }

// NewState gives each connection its own reading state.
func (t *CommitAckLost) NewState() any { return new(commitState) }

// Pipe passes the server's messages on until it cuts the connection.
func (t *CommitAckLost) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*commitState)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				t.flush(stub, st)
				stub.Close()
				return
			}
			out, cut := t.scan(st, c.Data)
			if len(out) > 0 {
				stub.Output <- &stream.StreamChunk{Data: out, Timestamp: c.Timestamp}
			}
			if cut {
				stub.Close() // the client's side of the connection closes
				discard(stub)
				return
			}
		}
	}
}

// Cleanup hands on a message held back when the toxic is removed, so the
// stream stays whole.
func (t *CommitAckLost) Cleanup(stub *toxics.ToxicStub) {
	if st, ok := stub.State.(*commitState); ok {
		t.flush(stub, st)
	}
}

func (t *CommitAckLost) flush(stub *toxics.ToxicStub, st *commitState) {
	if len(st.held) > 0 && !stub.Closed() {
		stub.Output <- &stream.StreamChunk{Data: st.held}
	}
	st.held = nil
}

// discard reads what the server still sends after the cut, so the proxy's
// reading side is not left blocked, until the stream ends.
func discard(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				return
			}
		}
	}
}

// scan reads data, the next bytes from the server, and returns the bytes to
// forward now (every complete message) and whether to cut the connection
// after them. An incomplete message at the end is held back until the rest
// arrives.
func (t *CommitAckLost) scan(st *commitState, data []byte) (out []byte, cut bool) {
	if !st.started && len(data) > 0 {
		st.started = true
		switch data[0] {
		case 'N': // "no TLS", answering the client's SSLRequest: one byte, no length
			out, cut := t.scan(st, data[1:])
			return append([]byte{'N'}, out...), cut
		case 'S': // TLS accepted: nothing readable follows
			st.opaque = true
		}
	}
	if st.opaque {
		return data, false
	}
	buf := append(st.held, data...)
	st.held = nil
	i := 0
	for len(buf)-i >= 5 {
		n := int(binary.BigEndian.Uint32(buf[i+1 : i+5]))
		if n < 4 || n > maxMessage {
			st.opaque = true
			return buf, false
		}
		end := i + 1 + n
		if end > len(buf) {
			break
		}
		typ, body := buf[i], buf[i+5:end]
		switch typ {
		case 'C': // CommandComplete: the tag, NUL-terminated
			tag := string(bytes.TrimRight(body, "\x00"))
			if tag == "COMMIT" && (t.Marker == "" || st.marked) && t.take() {
				return buf[:i], true
			}
			if tag == t.Marker {
				st.marked = true
			}
		case 'Z': // ReadyForQuery: 'I' idle, 'T' in a transaction, 'E' failed one
			if len(body) == 1 && body[0] == 'I' {
				st.marked = false
			}
		}
		i = end
	}
	st.held = append([]byte(nil), buf[i:]...)
	return buf[:i], false
}

// take claims one cut, if any is left.
func (t *CommitAckLost) take() bool {
	for {
		n := t.cuts.Load()
		if t.Count > 0 && n >= t.Count {
			return false
		}
		if t.cuts.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
