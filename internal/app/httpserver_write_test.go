package app

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// The write timeout bounds how long one request may hold its connection:
// a handler still running after it (a call to a gateway that hangs, a
// lock waited for too long) gets its connection cut and the client an
// error, rather than the connection, its descriptor and its goroutine held
// for as long as the handler likes. The handler here is slower than the
// timeout by construction: it returns only after the deadline has passed,
// so whatever it writes must never reach the client.
func TestHTTPServerCutsAHandlerSlowerThanItsWriteTimeout(t *testing.T) {
	t.Parallel()
	const write = 200 * time.Millisecond
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(3 * write)
		fmt.Fprint(w, "too late")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(slow, httpTimeouts{ReadHeader: time.Minute, Read: time.Minute, Write: write, Idle: time.Minute})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("a handler running %s past a %s write timeout answered %d %q; want the connection cut", 2*write, write, resp.StatusCode, body)
	}
}
