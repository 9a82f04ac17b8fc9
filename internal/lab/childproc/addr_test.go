package childproc_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
)

// FreeAddr hands out ports below the ephemeral range, each once, and each
// one can be listened on. (Another test binary may take a port between the
// check and the listen: that race is the caller's to lose now and then, so
// a lost race or two out of 50 is logged, not failed.)
func TestFreeAddrBelowTheEphemeralRange(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	lost := 0
	for range 50 {
		addr, err := childproc.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := strconv.Atoi(port); host != "127.0.0.1" || n < 1024 || n >= 32768 {
			t.Fatalf("FreeAddr = %s, want 127.0.0.1 and a port from 1024 to 32767", addr)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr handed out %s twice", addr)
		}
		seen[addr] = true
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("listen on the free address %s: %v (taken since)", addr, err)
			lost++
			continue
		}
		ln.Close()
	}
	if lost > 2 {
		t.Fatalf("%d of 50 free addresses could not be listened on", lost)
	}
}
