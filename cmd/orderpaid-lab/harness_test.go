package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/demo"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// addrWatcher is the stdout of an in-process run: it remembers the
// "<name> listening on <url>" lines so the test learns the ports bound on :0.
type addrWatcher struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	addrs map[string]string
	ready chan struct{}
	want  []string
}

var listeningRe = regexp.MustCompile(`^(\w+) listening on (http://\S+)$`)

func newAddrWatcher(want ...string) *addrWatcher {
	return &addrWatcher{addrs: map[string]string{}, ready: make(chan struct{}), want: want}
}

func (w *addrWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	sc := bufio.NewScanner(strings.NewReader(w.buf.String()))
	for sc.Scan() {
		if m := listeningRe.FindStringSubmatch(sc.Text()); m != nil {
			w.addrs[m[1]] = m[2]
		}
	}
	select {
	case <-w.ready:
	default:
		for _, name := range w.want {
			if w.addrs[name] == "" {
				return len(p), nil
			}
		}
		close(w.ready)
	}
	return len(p), nil
}

func (w *addrWatcher) addr(t *testing.T, name string) string {
	t.Helper()
	select {
	case <-w.ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %q listening line within 30s; output so far:\n%s", name, w.buf.String())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.addrs[name]
}

// startRun runs `orderpaid <args>` in-process until the test ends, and checks
// that it then shuts down cleanly (run returns nil).
func startRun(t *testing.T, env map[string]string, out io.Writer, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"orderpaid"}, args...), devGetenv(env), out, testLog{t})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("orderpaid %s: shut down with error: %v", strings.Join(args, " "), err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("orderpaid %s: did not shut down within 30s", strings.Join(args, " "))
		}
	})
}

// devGetenv reads env, where a test's run is a dev run (ORDERPAID_DEV=1)
// unless env says otherwise: the api then accepts the dev webhook secret.
func devGetenv(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok || k != config.DevVariable {
			return v
		}
		return "1"
	}
}

// testLog sends the process's logs to the test log, shown when a test fails.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// call does one JSON request and decodes the answer into out (if not nil).
func call(t *testing.T, method, url string, headers map[string]string, body any, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, url, raw, err)
		}
	}
	return resp.StatusCode
}

// audit is the API's GET /orders/{id}/audit, as the demo reads it.
type audit struct{ demo.Audit }

func (a audit) String() string {
	return fmt.Sprintf("executions=%v effects=%v", a.Executions, a.Effects)
}

// allEffectsOnce reports whether every effect of a paid order with an
// affiliate happened exactly once.
func (a audit) allEffectsOnce() bool { return a.Settled(0) }

// healthy reports whether GET url answers 200; a refused connection is
// "not yet", not a failure.
func healthy(url string) (bool, string) {
	resp, err := http.Get(url)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status
}

// eventually polls cond every 100ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not reached within %s; last state: %s", what, timeout, last)
}
