package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"
)

// httpTimeouts bound what one client can hold of a server (api and fakes).
//
// Failure they prevent: a slow or idle client holding a connection, and so a
// file descriptor and a goroutine, for ever. Without them a body sent at one
// byte a second is read for as long as the client likes, idle keep-alive
// connections pile up until the process runs out of descriptors (and
// /healthz stops answering), and one such client keeps every graceful
// shutdown waiting until it times out.
type httpTimeouts struct {
	ReadHeader time.Duration // the request line and headers
	Read       time.Duration // the whole request, body included
	Write      time.Duration // from the end of the headers to the end of the answer: the slowest handler must fit (a payment waits up to 10s for the gateway)
	Idle       time.Duration // a keep-alive connection between requests
}

// defaultHTTPTimeouts are the api's and the fakes'. Every request body here
// is small (the largest accepted is 1 MiB), so 10s is generous for a real
// client and short for a trickling one.
var defaultHTTPTimeouts = httpTimeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second, Idle: 30 * time.Second}

func newHTTPServer(h http.Handler, t httpTimeouts) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
	}
}

// serveHTTP serves h on ln until ctx is done, then shuts the server down with
// its own timeout: the shutdown context is NOT the cancelled ctx, or in-flight
// requests would be cut off at once.
func serveHTTP(ctx context.Context, g *errgroup.Group, name string, ln net.Listener, h http.Handler, timeout time.Duration, logger *slog.Logger) {
	serveHTTPWith(ctx, g, name, ln, newHTTPServer(h, defaultHTTPTimeouts), timeout, logger)
}

// serveHTTPWith is serveHTTP for a server already built.
//
// Shutdown stops accepting, closes idle connections at once and waits for the
// requests in progress. A connection still open when timeout runs out belongs
// to a client too slow to finish its request within it; it is closed, and the
// shutdown still counts as clean: every request that could finish did.
func serveHTTPWith(ctx context.Context, g *errgroup.Group, name string, ln net.Listener, srv *http.Server, timeout time.Duration, logger *slog.Logger) {
	g.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("%s server: %w", name, err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		logger.Info("shutting down", "server", name)
		err := srv.Shutdown(shutdownCtx)
		if errors.Is(err, context.DeadlineExceeded) {
			logger.Warn("connections still open after the shutdown timeout were closed", "server", name, "timeout", timeout)
			err = srv.Close()
		}
		if err != nil {
			return fmt.Errorf("shut down %s server: %w", name, err)
		}
		return nil
	})
}
