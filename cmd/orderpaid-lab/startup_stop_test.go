package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// A SIGTERM that arrives while the process is still starting (orchestrators
// send it to pods that are still starting) is an ordinary stop: run returns
// nil, so the process exits 0, and says nothing about PostgreSQL being
// unreachable. It used to exit 1 with "reach PostgreSQL ... is it running,
// and is DATABASE_URL right?: context canceled". DATABASE_URL points at a
// listener that accepts and never answers, so the stop lands in the
// connection to PostgreSQL every time.
func TestStopDuringStartUpIsAnOrdinaryStop(t *testing.T) {
	t.Parallel()
	for _, process := range []string{"api", "worker", "all"} {
		t.Run(process, func(t *testing.T) {
			t.Parallel()
			silent, accepted := silentServer(t)
			getenv := devGetenv(map[string]string{
				"DATABASE_URL": "postgres://postgres@" + silent + "/orderpaid?sslmode=disable",
				"BROKER":       "postgres", "HTTP_ADDR": "127.0.0.1:0", "FAKES_ADDR": "127.0.0.1:0",
			})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			out := &syncBuffer{}
			done := make(chan error, 1)
			go func() { done <- run(ctx, []string{"orderpaid", process}, getenv, out, out) }()
			select {
			case <-accepted:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s never connected to DATABASE_URL; output:\n%s", process, out.tail(20))
			}
			cancel() // what SIGTERM does to run's context (main.go)
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s stopped while connecting to PostgreSQL: err = %v, want nil (exit 0)", process, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not return within 10s of the stop", process)
			}
			if got := out.tail(20); strings.Contains(got, "reach PostgreSQL") {
				t.Errorf("%s stopped during start-up says PostgreSQL is unreachable:\n%s", process, got)
			}
		})
	}
}

// silentServer listens on 127.0.0.1, accepts connections and never answers
// them; accepted is closed on the first connection.
func silentServer(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if conns = append(conns, c); len(conns) == 1 {
				close(first)
			}
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), first
}
