package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/labpage"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/ops/reprocess"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/poison"
	"github.com/orderpaid/orderpaid/internal/telemetry"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// process is what a serving subcommand starts: which parts run in it.
type process struct {
	api, worker, fakes bool
}

func runAPI(e env) error    { return serve(e, "api", process{api: true}) }
func runWorker(e env) error { return serve(e, "worker", process{worker: true}) }
func runFakes(e env) error  { return serve(e, "fakes", process{fakes: true}) }
func runAll(e env) error    { return serve(e, "all", process{api: true, worker: true, fakes: true}) }

// serve starts the parts of p in one errgroup and runs until the context is
// cancelled (SIGINT, SIGTERM), then shuts each part down gracefully.
//
// A stop that arrives while the parts are still starting (an orchestrator
// stopping a pod that is not ready yet) is an ordinary stop as well: what
// the cancelled context made fail (connecting to PostgreSQL, checking the
// brokers) is not an error, and the process exits 0.
func serve(e env, name string, p process) (err error) {
	defer func() {
		if e.ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = nil
		}
	}()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The fakes have no guards and no fault points: there these flags would
	// be accepted and mean nothing, so they are not defined.
	var faultSpec, withoutList, crashAt, boundaryLog string
	var dedupe, abandonBacklog bool
	var lease time.Duration
	if p.api {
		fs.DurationVar(&lease, "lease", 0, "hold an Idempotency-Key and a charge attempt this long before another request may take it over (default "+payment.DefaultLockTimeout.String()+"); the crash matrix shortens it (needs "+config.DevVariable+"=1)")
	}
	if p.api || p.worker {
		fs.StringVar(&crashAt, "crash-at", "", "die at one boundary, process/flow/span#n[:before|after], as the crash matrix lists them (tests and the crash matrix only: needs "+config.DevVariable+"=1)")
		fs.StringVar(&boundaryLog, "boundaries", "", "append every boundary this process meets to `file`, one per line (the crash matrix's clean run; needs "+config.DevVariable+"=1)")
		fs.StringVar(&faultSpec, "faults", "", "arm fault points, comma-separated name=error|crash|pause[:count] (pause: hold the step "+fault.PauseFor.String()+", then go on): "+strings.Join(faultPoints(), ", ")+" (tests and scenarios only: needs "+config.DevVariable+"=1)")
		fs.StringVar(&withoutList, "without", "", "switch guards off to watch the damage, comma-separated: "+strings.Join(switches.Names(), ", ")+" (workshop only: needs "+config.DevVariable+"=1)")
	}
	if p.worker {
		fs.BoolVar(&dedupe, "dedupe-executions", false, "skip a handler whose message id this process already saw: the classic WRONG fix, for the scenario execution-dedupe (workshop only: needs "+config.DevVariable+"=1)")
		fs.BoolVar(&abandonBacklog, "abandon-postgres-backlog", false, "start on another broker (amqp, nats or kafka) although the postgres broker's tables hold unread messages; they are then never handled (see docs/operations.md)")
	}
	if err := parseFlags(fs, e, "[flags]"); err != nil {
		return helpOK(err)
	}
	cfg, logger, err := loadConfig(e)
	if err != nil {
		return err
	}
	// `all` (and `demo`, which runs it) is a dev run without ORDERPAID_DEV:
	// it accepts the lab's levers and the documented dev webhook secret.
	devRun := name == "all" || cfg.Dev
	if lease != 0 && !devRun {
		return usageError{fmt.Errorf("%s: --lease: a lab lever, refused in a production process: set %s=1", name, config.DevVariable)}
	}
	watch, closeWatch, err := watchBoundaries(name, devRun, crashAt, boundaryLog)
	if err != nil {
		return err
	}
	defer closeWatch()
	tel, logger, flushTelemetry, err := startTelemetry(e, name, cfg.ShutdownTimeout, logger, watch...)
	if err != nil {
		return err
	}
	defer flushTelemetry()
	if devRun {
		cfg = cfg.ForDevRun() // the API on loopback unless HTTP_ADDR says otherwise
	}
	lv, err := labLevers(name, devRun, withoutList, faultSpec, dedupe)
	if err != nil {
		return err
	}
	if off := lv.guards.Fixed(); off != "" {
		logger.Warn("guards switched off: effects may happen twice", "without", off)
	}
	// The lab page switches guards at run time only where one switch set
	// reaches the api's and the worker's guards: a dev run of both.
	if devRun && p.api && p.worker {
		lv.guards = lv.guards.Live()
		if lv.faults == nil {
			lv.faults = fault.New(crashNow)
		}
	}

	g, ctx := errgroup.WithContext(e.ctx)
	var apiLn, fakesLn net.Listener
	if p.fakes {
		if fakesLn, err = listen(cfg.FakesAddr, "FAKES_ADDR"); err != nil {
			return err
		}
	}
	if p.api {
		if apiLn, err = listen(cfg.HTTPAddr, "HTTP_ADDR"); err != nil {
			return err
		}
	}
	if p.api && p.fakes {
		// In one process, wire the parts to the addresses really bound (":0"
		// in tests) unless the environment says otherwise.
		if e.getenv("FAKES_URL") == "" {
			cfg.FakesURL = "http://" + fakesLn.Addr().String()
		}
		if e.getenv("WEBHOOK_URL") == "" {
			cfg.WebhookURL = "http://" + apiLn.Addr().String() + "/webhooks/payments"
		}
	}

	// In a dev run the documented dev secret is accepted. The fakes stand in
	// for the provider and sign with whatever secret they are given.
	secret, secretKind, err := cfg.WebhookSecretFor(devRun || !p.api)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", name, err)}
	}
	logger.Info("webhook secret", "kind", secretKind, "bytes", len(secret))
	if secretKind == config.SecretDev && p.api {
		logger.Warn("the api verifies webhooks with the documented dev secret: development only, anyone can forge a payment")
	}

	if p.fakes {
		gw := fakes.NewGateway(fakes.GatewayConfig{WebhookURL: cfg.WebhookURL, WebhookSecret: secret})
		defer gw.Close()
		serveHTTP(ctx, g, "fakes", fakesLn, fakes.New(gw, fakes.NewNotifier()), cfg.ShutdownTimeout, logger)
		fmt.Fprintf(e.stdout, "fakes listening on http://%s\n", fakesLn.Addr())
	}
	if !p.api && !p.worker {
		return g.Wait()
	}

	pool, err := postgres.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	// Before anything touches the database (the worker's broker creates
	// tables): a schema older or newer than this binary's is refused.
	if err := postgres.RequireSchema(ctx, pool); err != nil {
		return err
	}
	// OUTBOX_RELAY=logical: the slot exists before this process writes a
	// row it must relay (outbox.EnsureSlot).
	if cfg.OutboxRelay == config.RelayLogical {
		slot, err := outbox.EnsureSlot(ctx, pool)
		if err != nil {
			return fmt.Errorf("OUTBOX_RELAY=logical: %w", err)
		}
		logger.Info("outbox relayed from the WAL", "slot", slot, "publication", outbox.Publication)
	}
	// Watermill's own Info lines (subscriptions, schema checks) are
	// debugging detail here; keep the log for the flow's events.
	wmLogger := watermill.NewSlogLoggerWithLevelMapping(logger, map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug})
	b, err := broker.New(ctx, cfg, pool, wmLogger)
	if err != nil {
		return err
	}
	defer b.Close()

	if p.api {
		api := httpapi.NewServer(httpapi.Deps{
			Pool:     pool,
			Ingestor: switches.Ingestor(webhook.NewIngestor(pool, secret).WithMetrics(tel.Metrics), lv.guards),
			Payments: switches.Payments(payment.NewService(pool, payment.NewGatewayClient(cfg.FakesURL, tel.HTTPClient(10*time.Second)), payment.Config{LockTimeout: lease}).WithFaults(lv.faults), lv.guards),
			Ready: map[string]func(context.Context) error{
				"database": pool.Ping,
				"broker":   b.Ping,
			},
			Logger:    logger,
			Telemetry: tel,
			Lab:       labPage(devRun, name, b.Name, cfg.FakesURL, lv, pool, logger),
		})
		serveHTTP(ctx, g, "api", apiLn, api, cfg.ShutdownTimeout, logger)
		// Completed Idempotency-Keys are kept for payment.Config.Retention
		// (24h): a retry within that window gets the stored response.
		keyCleaner := payment.NewCleaner(pool, payment.Config{}, logger)
		g.Go(func() error { return keyCleaner.Run(ctx) })
		fmt.Fprintf(e.stdout, "api listening on http://%s\n", apiLn.Addr())
	}
	if p.worker {
		w := workerParts{cfg: cfg, pool: pool, broker: b, levers: lv, dedupe: dedupe, abandonBacklog: abandonBacklog, tel: tel, logger: logger, wmLogger: wmLogger}
		if err := startWorker(ctx, g, w); err != nil {
			return err
		}
		if !p.api {
			if err := serveWorkerMetrics(ctx, g, e, cfg, tel, logger); err != nil {
				return err
			}
		}
		fmt.Fprintf(e.stdout, "worker running (broker %s)\n", b.Name)
	}
	if err := serveProfiler(ctx, g, e, cfg, logger); err != nil {
		return err
	}
	return g.Wait()
}

// workerParts is what a worker is built from.
type workerParts struct {
	cfg      config.Config
	pool     *pgxpool.Pool
	broker   *broker.Broker
	levers   labPulls // the lab's, for the consumers
	dedupe   bool     // the wrong fix, for the scenario execution-dedupe
	tel      *telemetry.Telemetry
	logger   *slog.Logger
	wmLogger watermill.LoggerAdapter

	// abandonBacklog starts on another broker although the postgres
	// broker's tables hold unread messages (--abandon-postgres-backlog).
	abandonBacklog bool
}

// startWorker provisions the consumers' queues, then starts the relay and the
// consumers' router.
func startWorker(ctx context.Context, g *errgroup.Group, w workerParts) error {
	cfg, pool, b, tel, logger := w.cfg, w.pool, w.broker, w.tel, w.wmLogger
	// Each lane of the relay, and each consumer on the postgres broker, holds
	// a connection while its message is handled; the handlers need more.
	held := outbox.RelayLanes
	if b.Name == config.BrokerPostgres {
		held += 2
	}
	if size := int(pool.Config().MaxConns); size < held+4 {
		return fmt.Errorf("DATABASE_URL sets pool_max_conns=%d, but a worker on BROKER=%s holds up to %d connections "+
			"while messages are in its handlers, and they need more: set pool_max_conns to at least %d, or leave it out (default %d)",
			size, b.Name, held, held+4, postgres.DefaultMaxConns)
	}
	if err := broker.RefuseStrandedMessages(ctx, cfg, pool, consumer.ConsumerGroups(), w.abandonBacklog, w.logger); err != nil {
		return err
	}
	for _, s := range consumer.Subscriptions() {
		if err := b.Provision(s.Topic, s.Group); err != nil {
			return err
		}
	}
	b.WithFaults(w.levers.faults) // Kafka's FaultBeforeOffsetCommit
	system := telemetry.MessagingSystem(b.Name)
	relay, err := outbox.NewRelay(pool, b.Publisher, logger, outbox.RelayConfig{
		CloseTimeout: cfg.ShutdownTimeout, TracerProvider: tel.TracerProvider, System: system, Metrics: tel.Metrics,
	})
	if err != nil {
		return err
	}
	notifier := notify.NewClient(cfg.FakesURL, tel.HTTPClient(10*time.Second))
	gateway := payment.NewGatewayClient(cfg.FakesURL, tel.HTTPClient(10*time.Second))
	consumers := consumer.NewConsumers(pool, notifier).WithGateway(gateway).
		WithFaults(w.levers.faults).WithTelemetry(tel.Metrics, w.logger)
	consumers = switches.Consumers(consumers, w.levers.guards, b.Publisher)
	outboxBacklog := queries.New(pool).OutboxBacklog
	if cfg.OutboxRelay == config.RelayLogical {
		// The polling relay's backlog would count rows past positions it no
		// longer moves: the slot's lag is the backlog here.
		outboxBacklog = nil
		if err := telemetry.ObserveSlot(tel.MeterProvider, func(ctx context.Context) (int64, int64, bool, error) { return outbox.SlotLag(ctx, pool) }); err != nil {
			return err
		}
	}
	if err := telemetry.ObserveQueues(tel.MeterProvider, outboxBacklog, queries.New(pool).PoisonCountPending); err != nil {
		return err
	}
	var inner []message.HandlerMiddleware
	if w.levers.guards != nil {
		inner = append(inner, switches.HoldWhileOutboxOff(w.levers.guards)) // for the outbox's mistake
	}
	if w.dedupe {
		mw, err := switches.DedupeExecutions(0, logger)
		if err != nil {
			return err
		}
		inner = append(inner, mw)
	}
	// Batch mode (CONSUMER_BATCH_SIZE > 1): every topic is read N at a
	// time. order_paid and order_confirmed have their guards applied to
	// the set (consumer.HandleOrderPaidBatch, HandleOrderConfirmedBatch);
	// the refund topics, rare, are handled message by message in one
	// transaction per batch (consumer.InOneTransaction).
	var skip []string
	var batches []*consumer.BatchLoop
	if n := cfg.ConsumerBatchSize; n > 1 {
		for _, bt := range []struct {
			topic, group string
			handle       func([]*message.Message) []error
			one          func(*message.Message) error
		}{
			{messages.TopicOrderPaid, consumer.HandlerOrderPaid, consumers.Batched((*consumer.Consumers).HandleOrderPaidBatch), consumers.HandleOrderPaid},
			{messages.TopicOrderConfirmed, consumer.HandlerOrderConfirmed, consumers.Batched((*consumer.Consumers).HandleOrderConfirmedBatch), consumers.HandleOrderConfirmed},
			{messages.TopicOrderRefunded, consumer.HandlerOrderRefunded, consumers.Batched(consumer.InOneTransaction((*consumer.Consumers).HandleOrderRefunded)), consumers.HandleOrderRefunded},
			{messages.TopicRefundRequested, consumer.HandlerRefundRequested, consumers.Batched(consumer.InOneTransaction((*consumer.Consumers).HandleRefundRequested)), consumers.HandleRefundRequested},
			{messages.TopicRefundConfirmed, consumer.HandlerRefundConfirmed, consumers.Batched(consumer.InOneTransaction((*consumer.Consumers).HandleRefundConfirmed)), consumers.HandleRefundConfirmed},
		} {
			reader, err := b.BatchReader(bt.topic, bt.group, n)
			if cfg.ConsumerPosition == config.PositionWithEffects {
				reader, err = b.BatchReaderWithEffects(pool, bt.topic, bt.group, n)
			}
			if err != nil {
				return fmt.Errorf("CONSUMER_BATCH_SIZE=%d: %w", n, err)
			}
			skip = append(skip, bt.topic)
			batches = append(batches, &consumer.BatchLoop{
				// With a guard off, one message at a time (switches.Batches).
				Reader: reader, Topic: bt.topic, Group: bt.group, Handle: switches.Batches(w.levers.guards, bt.handle, bt.one),
				Poison: poison.NewStore(queries.New(postgres.Routed{Pool: pool})), Logger: w.logger,
				Drain: cfg.ShutdownTimeout * 3 / 4, // as broker.NewDraining's
			})
		}
		w.logger.Info("batch mode: every topic read and applied in batches", "consumer_batch_size", n, "consumer_position", cfg.ConsumerPosition)
	}
	router, err := consumer.NewRouter(b, consumers, poison.NewStore(queries.New(pool)), logger, consumer.RouterConfig{
		CloseTimeout: cfg.ShutdownTimeout,
		Outer:        []message.HandlerMiddleware{telemetry.ConsumerMiddleware(tel.TracerProvider, system)},
		Inner:        inner,
		Skip:         skip,
	})
	if err != nil {
		return err
	}
	// Before the relay starts: back from OUTBOX_RELAY=logical, the polling
	// relay's lanes start where the slot stopped (while the slot, the record
	// of what it published, is still there); a slot nobody reads is warned
	// about, and the outbox's dropped when the polling relay will publish
	// all it holds.
	if cfg.OutboxRelay != config.RelayLogical {
		outbox.SwitchBack(ctx, pool, w.logger)
	}
	outbox.TidySlots(ctx, pool, cfg.OutboxRelay == config.RelayLogical, w.logger)
	switch n := cfg.ConsumerBatchSize; {
	case cfg.OutboxRelay == config.RelayLogical:
		// The outbox's inserts from the slot, a transaction at a time (in
		// batch mode through the broker's batch publisher).
		out := b.Publisher
		if n > 1 {
			out = b.BatchPublisher
		}
		logical := outbox.NewLogicalRelay(pool, out, w.logger, outbox.RelayConfig{
			TracerProvider: tel.TracerProvider, System: system, Metrics: tel.Metrics,
		}).WithFaults(w.levers.faults)
		g.Go(func() error { return logical.Run(ctx) })
	case n > 1:
		// Batch mode relays the outbox in batches too, on the same lanes
		// and positions as the relay of one message per publish.
		batchRelay := outbox.NewBatchRelay(pool, b.BatchPublisher, w.logger, n, outbox.RelayConfig{
			TracerProvider: tel.TracerProvider, System: system, Metrics: tel.Metrics,
		})
		g.Go(func() error { return batchRelay.Run(ctx) })
	default:
		g.Go(func() error { return relay.Run(ctx) })
	}
	if len(router.Handlers()) > 0 {
		// (In batch mode the batch loops read every topic: a router
		// without handlers would wait for a Close that never comes.)
		g.Go(func() error { return router.Run(ctx) })
	}
	for _, l := range batches {
		g.Go(func() error { return l.Run(ctx) })
	}
	return nil
}

func listen(addr, variable string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s=%s (is another process using it?): %w", variable, addr, err)
	}
	return ln, nil
}

// labPage is the lab page (GET /lab, internal/lab/labpage) of a dev run,
// which the API mounts; nil outside a dev run, where the API serves no lab
// page. Its replays are `orderpaid reprocess`'s, on the process's own pool.
func labPage(devRun bool, process, brokerName, fakesURL string, lv labPulls, pool *pgxpool.Pool, logger *slog.Logger) httpapi.LabPage {
	if !devRun {
		return nil // not a nil *labpage.Page: the API would take it for a page
	}
	note := ""
	if !lv.guards.CanSwitch() {
		note = "guards can be switched at run time only where the api and the worker share a process, and this " +
			process + " process has no worker: start workshop mode with `orderpaid all`, or switch guards off at " +
			"start with ORDERPAID_DEV=1 and --without NAME on the api and the worker"
	}
	var points []string
	if lv.guards.CanSwitch() { // the worker shares this process: the page may fail it
		points = faultPoints()
	}
	return labpage.New(labpage.Config{
		Process: process, Broker: brokerName, FakesURL: fakesURL, Switches: lv.guards, Faults: lv.faults, GuardsNote: note, FaultPoints: points,
		Pool: pool, Logger: logger,
		Replay: func(ctx context.Context, t labpage.ReplayTarget, out io.Writer) error {
			opts := reprocess.Options{Out: out}
			switch {
			case t.Poison:
				_, err := reprocess.Poison(ctx, pool, opts)
				return err
			case t.MessageID != "":
				return reprocess.Message(ctx, pool, t.MessageID, opts)
			default:
				return reprocess.Order(ctx, pool, t.OrderID, opts)
			}
		},
	})
}
