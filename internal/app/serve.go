package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/telemetry"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Parts are what a serving process runs.
type Parts struct {
	API, Worker, Fakes bool
}

// Serve starts the parts p of the process name in one errgroup and runs
// until the context is cancelled (SIGINT, SIGTERM), then shuts each part
// down gracefully. lab adds its flags and levers (nil: none).
//
// A stop that arrives while the parts are still starting (an orchestrator
// stopping a pod that is not ready yet) is an ordinary stop as well: what
// the cancelled context made fail (connecting to PostgreSQL, checking the
// brokers) is not an error, and the process exits 0.
func Serve(e Env, name string, p Parts, lab Lab) (err error) {
	defer func() {
		if e.Ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = nil
		}
	}()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var abandonBacklog bool
	if p.Worker {
		fs.BoolVar(&abandonBacklog, "abandon-postgres-backlog", false, "start on another broker (amqp, nats or kafka) although the postgres broker's tables hold unread messages; they are then never handled (see docs/operations.md)")
	}
	levers := pull(lab, fs, name, p)
	if err := ParseFlags(fs, e, "[flags]"); err != nil {
		return HelpOK(err)
	}
	cfg, logger, err := LoadConfig(e)
	if err != nil {
		return err
	}
	// A process with the fakes (orderpaid-lab's all) is a dev run without
	// ORDERPAID_DEV: it accepts the lab's levers and the documented dev
	// webhook secret.
	devRun := p.Fakes || cfg.Dev
	lv, err := levers(devRun)
	if err != nil {
		return err
	}
	defer lv.close()
	tel, logger, flushTelemetry, err := startTelemetry(e, name, cfg.ShutdownTimeout, logger, lv.Spans...)
	if err != nil {
		return err
	}
	defer flushTelemetry()
	if devRun {
		cfg = cfg.ForDevRun() // the API on loopback unless HTTP_ADDR says otherwise
	}
	if lv.GuardsOff != "" {
		logger.Warn("guards switched off: effects may happen twice", "without", lv.GuardsOff)
	}
	s := &serving{e: e, name: name, p: p, lab: lab, cfg: cfg, devRun: devRun, levers: lv, tel: tel, logger: logger, abandonBacklog: abandonBacklog}
	return s.run()
}

// serving is one serving process once its flags and configuration are read.
type serving struct {
	e              Env
	name           string
	p              Parts
	lab            Lab
	cfg            config.Config
	devRun         bool
	levers         Levers
	tel            *telemetry.Telemetry
	logger         *slog.Logger
	wmLogger       watermill.LoggerAdapter
	abandonBacklog bool
}

// run listens, starts the fakes, then the api and the worker on one pool
// and broker, and waits for them.
func (s *serving) run() error {
	g, ctx := errgroup.WithContext(s.e.Ctx)
	apiLn, fakesLn, err := s.listen()
	if err != nil {
		return err
	}
	// In a dev run the documented dev secret is accepted. The fakes stand in
	// for the provider and sign with whatever secret they are given.
	secret, secretKind, err := s.cfg.WebhookSecretFor(s.devRun || !s.p.API)
	if err != nil {
		return UsageError{fmt.Errorf("%s: %w", s.name, err)}
	}
	s.logger.Info("webhook secret", "kind", secretKind, "bytes", len(secret))
	if secretKind == config.SecretDev && s.p.API {
		s.logger.Warn("the api verifies webhooks with the documented dev secret: development only, anyone can forge a payment")
	}
	if s.p.Fakes {
		h, closeFakes := s.lab.Fakes(s.cfg.WebhookURL, secret)
		defer closeFakes()
		serveHTTP(ctx, g, "fakes", fakesLn, h, s.cfg.ShutdownTimeout, s.logger)
		fmt.Fprintf(s.e.Stdout, "fakes listening on http://%s\n", fakesLn.Addr())
	}
	if s.p.API || s.p.Worker {
		pool, b, err := s.connect(ctx)
		if err != nil {
			return err
		}
		defer pool.Close()
		defer b.Close()
		if s.p.API {
			s.startAPI(ctx, g, apiLn, pool, b, secret)
		}
		if s.p.Worker {
			if err := s.startWorker(ctx, g, pool, b); err != nil {
				return err
			}
		}
	}
	if err := serveProfiler(ctx, g, s.e, s.cfg, s.logger); err != nil {
		return err
	}
	return g.Wait()
}

// listen binds the api's and the fakes' addresses. In one process, the
// parts are wired to the addresses really bound (":0" in tests) unless the
// environment says otherwise.
func (s *serving) listen() (apiLn, fakesLn net.Listener, err error) {
	if s.p.Fakes {
		if fakesLn, err = listen(s.cfg.FakesAddr, "FAKES_ADDR"); err != nil {
			return nil, nil, err
		}
	}
	if s.p.API {
		if apiLn, err = listen(s.cfg.HTTPAddr, "HTTP_ADDR"); err != nil {
			return nil, nil, err
		}
	}
	if s.p.API && s.p.Fakes {
		if s.e.Getenv("FAKES_URL") == "" {
			s.cfg.FakesURL = "http://" + fakesLn.Addr().String()
		}
		if s.e.Getenv("WEBHOOK_URL") == "" {
			s.cfg.WebhookURL = "http://" + apiLn.Addr().String() + "/webhooks/payments"
		}
	}
	return apiLn, fakesLn, nil
}

// connect opens the pool on DATABASE_URL, checks its schema and, with
// OUTBOX_RELAY=logical, the slot, then connects to the broker.
func (s *serving) connect(ctx context.Context) (_ *pgxpool.Pool, _ *broker.Broker, err error) {
	pool, err := postgres.Connect(ctx, s.cfg.DatabaseURL, s.levers.Pool)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			pool.Close()
		}
	}()
	// Before anything touches the database (the worker's broker creates
	// tables): a schema older or newer than this binary's is refused.
	if err := postgres.RequireSchema(ctx, pool); err != nil {
		return nil, nil, err
	}
	// OUTBOX_RELAY=logical: the slot exists before this process writes a
	// row it must relay (outbox.EnsureSlot).
	if s.cfg.OutboxRelay == config.RelayLogical {
		slot, err := outbox.EnsureSlot(ctx, pool)
		if err != nil {
			return nil, nil, fmt.Errorf("OUTBOX_RELAY=logical: %w", err)
		}
		s.logger.Info("outbox relayed from the WAL", "slot", slot, "publication", outbox.Publication)
	}
	// Watermill's own Info lines (subscriptions, schema checks) are
	// debugging detail here; keep the log for the flow's events.
	s.wmLogger = watermill.NewSlogLoggerWithLevelMapping(s.logger, map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug})
	b, err := broker.New(ctx, s.cfg, pool, s.wmLogger)
	if err != nil {
		return nil, nil, err
	}
	return pool, b, nil
}

// startAPI serves the HTTP API on ln, and cleans completed
// Idempotency-Keys once payment.Config.Retention (24h) has passed: a retry
// within that window gets the stored response.
func (s *serving) startAPI(ctx context.Context, g *errgroup.Group, ln net.Listener, pool *pgxpool.Pool, b *broker.Broker, secret []byte) {
	lv, tel := s.levers, s.tel
	gateway := payment.NewGatewayClient(s.cfg.FakesURL, tel.HTTPClient(10*time.Second))
	api := httpapi.NewServer(httpapi.Deps{
		Pool:     pool,
		Ingestor: lv.ingestor(webhook.NewIngestor(pool, secret).WithMetrics(tel.Metrics)),
		Payments: lv.payments(payment.NewService(pool, gateway, payment.Config{LockTimeout: lv.LockTimeout}).WithFaults(lv.Faults)),
		Ready: map[string]func(context.Context) error{
			"database": pool.Ping,
			"broker":   b.Ping,
		},
		Logger:    s.logger,
		Telemetry: tel,
		Lab:       lv.page(PageParts{Process: s.name, Broker: b.Name, FakesURL: s.cfg.FakesURL, Pool: pool, Logger: s.logger}),
	})
	serveHTTP(ctx, g, "api", ln, api, s.cfg.ShutdownTimeout, s.logger)
	keyCleaner := payment.NewCleaner(pool, payment.Config{}, s.logger)
	g.Go(func() error { return keyCleaner.Run(ctx) })
	fmt.Fprintf(s.e.Stdout, "api listening on http://%s\n", ln.Addr())
}

func listen(addr, variable string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s=%s (is another process using it?): %w", variable, addr, err)
	}
	return ln, nil
}
