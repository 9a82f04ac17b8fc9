package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// startTestServer serves an echo handler with timeouts t, shutting down with
// shutdownTimeout when the returned stop is called; stop returns what the
// shutdown returned.
func startTestServer(t *testing.T, timeouts httpTimeouts, shutdownTimeout time.Duration) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		fmt.Fprintf(w, "read %d bytes", len(body))
	})
	ctx, cancel := context.WithCancel(context.Background())
	g := &errgroup.Group{}
	serveHTTPWith(ctx, g, "test", ln, newHTTPServer(h, timeouts), shutdownTimeout, slog.New(slog.NewTextHandler(io.Discard, nil)))
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return g.Wait()
	}
	t.Cleanup(func() { _ = stop() })
	return ln.Addr().String(), stop
}

// trickle opens a connection and sends a POST whose 1000-byte body comes one
// byte every 50ms, as a slow or hostile client would, until the server
// closes the connection or the test ends.
func trickle(t *testing.T, addr string) (closed <-chan time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	done := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		for range 1000 {
			if _, err := conn.Write([]byte("x")); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	go func() {
		// The server's answer (408 or a close) ends the wait.
		_, _ = io.Copy(io.Discard, conn)
		done <- time.Since(start)
	}()
	return done
}

func TestHTTPServerCutsASlowBody(t *testing.T) {
	t.Parallel()
	addr, _ := startTestServer(t, httpTimeouts{ReadHeader: time.Second, Read: 300 * time.Millisecond, Write: time.Second, Idle: time.Second}, time.Second)
	select {
	case d := <-trickle(t, addr):
		t.Logf("closed after %s", d.Round(time.Millisecond))
	case <-time.After(3 * time.Second):
		t.Fatal("a body trickling at 20 bytes/s is still being read after 3s; the read timeout is 300ms")
	}
}

func TestHTTPServerClosesIdleKeepAlives(t *testing.T) {
	t.Parallel()
	addr, _ := startTestServer(t, httpTimeouts{ReadHeader: time.Second, Read: time.Second, Write: time.Second, Idle: 300 * time.Millisecond}, time.Second)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// Now idle, kept alive: the server must close it after the idle timeout.
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle keep-alive connection: read = %v, want EOF (closed by the server within its 300ms idle timeout)", err)
	}
}

// A graceful shutdown with a slow client connected ends within its timeout,
// and cleanly: the slow client's connection is closed, the process exits 0.
func TestHTTPServerShutsDownWithASlowClient(t *testing.T) {
	t.Parallel()
	// Timeouts far longer than the shutdown's, so only the shutdown ends it.
	long := httpTimeouts{ReadHeader: time.Minute, Read: time.Minute, Write: time.Minute, Idle: time.Minute}
	addr, stop := startTestServer(t, long, 500*time.Millisecond)
	closed := trickle(t, addr)
	time.Sleep(200 * time.Millisecond) // the request is in progress
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("shutdown with a slow client connected: %v, want a clean stop", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("shutdown took %s, want about its 500ms timeout", d)
	}
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("the slow client's connection is still open after the shutdown")
	}
}

// The real servers have every timeout: the fakes' server (orderpaid-lab
// fakes, served here with a stand-in handler) cuts a trickling body within
// its 10s read timeout.
func TestFakesServerHasTimeouts(t *testing.T) {
	t.Parallel()
	for name, d := range map[string]time.Duration{
		"ReadHeader": defaultHTTPTimeouts.ReadHeader, "Read": defaultHTTPTimeouts.Read,
		"Write": defaultHTTPTimeouts.Write, "Idle": defaultHTTPTimeouts.Idle,
	} {
		if d <= 0 {
			t.Errorf("defaultHTTPTimeouts.%s = %s, want a positive timeout", name, d)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	out, done := &lineWatcher{prefix: "fakes listening on http://", found: make(chan string, 1)}, make(chan error, 1)
	go func() {
		env := map[string]string{"FAKES_ADDR": "127.0.0.1:0", "DATABASE_URL": "postgres://127.0.0.1:1/none"}
		done <- Serve(Env{Binary: "orderpaid-lab", Ctx: ctx, Getenv: func(k string) string { return env[k] }, Stdout: out, Stderr: io.Discard},
			"fakes", Parts{Fakes: true}, echoLab{})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fakes: %v", err)
		}
	})
	var addr string
	select {
	case addr = <-out.found:
	case err := <-done:
		t.Fatalf("fakes ended before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("fakes not listening after 10s")
	}
	select {
	case d := <-trickle(t, addr):
		t.Logf("closed after %s", d.Round(time.Millisecond))
	case <-time.After(defaultHTTPTimeouts.Read + 5*time.Second):
		t.Fatalf("the fakes' server still reads a trickling body after %s", defaultHTTPTimeouts.Read+5*time.Second)
	}
}

// echoLab stands in for orderpaid-lab: its fakes echo.
type echoLab struct{}

func (echoLab) Flags(*flag.FlagSet, string, Parts) func(bool) (Levers, error) {
	return func(bool) (Levers, error) { return Levers{}, nil }
}

func (echoLab) Fakes(string, []byte) (http.Handler, func()) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(w, r.Body) }), func() {}
}

// lineWatcher sends the rest of the first line written to it that starts
// with prefix.
type lineWatcher struct {
	mu     sync.Mutex
	buf    strings.Builder
	prefix string
	found  chan string
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for line := range strings.Lines(w.buf.String()) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), w.prefix); ok && w.prefix != "" {
			w.found <- rest
			w.prefix = ""
		}
	}
	return len(p), nil
}
