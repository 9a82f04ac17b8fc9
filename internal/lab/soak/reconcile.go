package soak

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// ReconcileConfig is one reconcile soak (`orderpaid-lab soak --reconcile`):
// customers pay orders through the api while the api is SIGKILLed, a share
// of the gateway's webhooks never arrive, and `orderpaid reconcile` runs
// twice at once, during the load and after it. Zero values take the
// documented defaults.
type ReconcileConfig struct {
	// Binary, AdminURL, Broker, AMQPURL, NATSURL, NATSServer and
	// KafkaBrokers are as in Config (with nats and no NATSURL, a private
	// nats-server; with kafka and no KafkaBrokers, an in-process cluster).
	Binary, AdminURL                                   string
	Broker, AMQPURL, NATSURL, NATSServer, KafkaBrokers string
	// Orders is the number of orders paid (default 1000); Rate the orders
	// created and paid per second (default 25); Workers the worker
	// processes (default 2).
	Orders  int
	Rate    float64
	Workers int
	// KillEvery is how often the api is SIGKILLed, and at once started
	// again, while orders are being paid (default 3s).
	KillEvery time.Duration
	// GatewayDelay is how long a charge takes on its way to the gateway and
	// again on its way back (default 200ms): the windows in which a kill
	// leaves an attempt the gateway never saw, or a charge whose answer
	// nobody stored.
	GatewayDelay time.Duration
	// DropWebhooks is the share of payment.succeeded webhooks that never
	// arrive (default 0.1); GiveUp the share of customers who, once a
	// payment got no answer, never try again (default 0.5; the others retry
	// with the same Idempotency-Key until answered).
	DropWebhooks, GiveUp float64
	// Grace is reconcile's --grace (default 2s); ReconcileEvery how often
	// two reconcile run at once during the load (default 6s).
	Grace, ReconcileEvery time.Duration
	// SettleTimeout bounds the wait for the flow to settle after the last
	// lease (default 3 minutes).
	SettleTimeout time.Duration
	// LogDir, Keep, KeepOnFailure and Progress are as in Config.
	LogDir              string
	Keep, KeepOnFailure bool
	Progress            io.Writer
}

func (c ReconcileConfig) withDefaults() ReconcileConfig {
	c.Broker = cmp.Or(c.Broker, config.BrokerNATS)
	c.Orders = cmp.Or(c.Orders, 1000)
	c.Rate = cmp.Or(c.Rate, 25)
	c.Workers = cmp.Or(c.Workers, 2)
	c.KillEvery = cmp.Or(c.KillEvery, 3*time.Second)
	c.GatewayDelay = cmp.Or(c.GatewayDelay, 200*time.Millisecond)
	c.DropWebhooks = cmp.Or(c.DropWebhooks, 0.1)
	c.GiveUp = cmp.Or(c.GiveUp, 0.5)
	c.Grace = cmp.Or(c.Grace, 2*time.Second)
	c.ReconcileEvery = cmp.Or(c.ReconcileEvery, 6*time.Second)
	c.SettleTimeout = cmp.Or(c.SettleTimeout, 3*time.Minute)
	c.Progress = cmp.Or[io.Writer](c.Progress, io.Discard)
	return c
}

// leaseWait bounds the wait for the last attempt a killed api held to pass
// its lease: payment.Config.LockTimeout, 30s, which the api does not let
// the soak shorten, and a margin.
const leaseWait = 45 * time.Second

// RunReconcile runs one reconcile soak and returns its report. An error
// means the soak could not run; one that ran and found a violation returns
// a report whose Passed is false.
//
// After the load it waits for the leases of the attempts the killed apis
// held (up to 30s after the last kill), runs two reconcile at once, waits
// for the flow to settle, and runs reconcile once more: that one must find
// nothing.
func RunReconcile(ctx context.Context, cfg ReconcileConfig) (rep ReconcileReport, err error) {
	cfg = cfg.withDefaults()
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.Progress, "soak: "+format+"\n", args...) }
	rep.Config = cfg
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return rep, fmt.Errorf("create log directory %s: %w", cfg.LogDir, err)
	}
	d, err := bench.CreateDatabase(ctx, cfg.AdminURL, "orderpaid_soak")
	if err != nil {
		return rep, err
	}
	rep.Database = d.Name
	defer func() {
		if cfg.Keep || cfg.KeepOnFailure && !rep.Passed() {
			logf("kept database %s", d.Name)
			d.Pool.Close()
			return
		}
		err = errors.Join(err, d.Drop())
	}()
	own, err := startOwnBroker(ctx, cfg.Broker, cfg.NATSServer, cfg.LogDir, &cfg.NATSURL, &cfg.KafkaBrokers, logf)
	if err != nil {
		return rep, err
	}
	defer own.stop()
	rep.KafkaInProcess = own.kafka != nil
	prefix := "r" + bench.RandomHex(4) + "_"
	defer func() {
		err = errors.Join(err, bench.DeleteTopology(cfg.Broker, cfg.AMQPURL, cfg.NATSURL, cfg.KafkaBrokers, prefix))
	}()
	loss, err := newWebhookLoss(cfg.DropWebhooks)
	if err != nil {
		return rep, err
	}
	defer loss.close()
	slow, err := newSlowGateway(cfg.GatewayDelay)
	if err != nil {
		return rep, err
	}
	defer slow.close()
	stack, err := bench.StartStack(ctx, bench.StackConfig{
		Binary: cfg.Binary, LogDir: cfg.LogDir, DatabaseURL: d.URL, Workers: cfg.Workers,
		Broker: cfg.Broker, AMQPURL: cfg.AMQPURL, NATSURL: cfg.NATSURL, KafkaBrokers: cfg.KafkaBrokers, Prefix: prefix,
		ProvidersURL: slow.URL(), WebhookURL: loss.URL() + "/webhooks/payments",
	})
	if err != nil {
		return rep, err
	}
	defer func() { _ = stack.Stop() }()
	loss.to(stack.API)
	slow.to(stack.Fakes)
	rc := &reconciler{bin: cfg.Binary, logDir: cfg.LogDir, grace: cfg.Grace,
		// A dev run: its --grace (2s by default) is below reconcile.MinGrace,
		// which only a dev run may go under, on orders the soak drives.
		env: []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + d.URL, "FAKES_URL=" + stack.Fakes, config.DevVariable + "=1"}}
	logf("%d orders at %.0f/s, the api SIGKILLed every %s, the gateway %s away each way, %.0f%% of payment.succeeded dropped, "+
		"%.0f%% of customers giving up after no answer; two reconcile --grace %s at once every %s; logs in %s",
		cfg.Orders, cfg.Rate, cfg.KillEvery, cfg.GatewayDelay, 100*cfg.DropWebhooks, 100*cfg.GiveUp, cfg.Grace, cfg.ReconcileEvery, cfg.LogDir)

	loadStart := time.Now()
	var orders []bench.Order
	if orders, rep.Payments, rep.Faults, err = payUnderKills(ctx, cfg, d.Pool, stack, rc, logf); err != nil {
		return rep, err
	}
	rep.Orders, rep.LoadTime = len(orders), time.Since(loadStart)
	logf("every customer done after %s: %d paid at once, %d after a retry (%d waited out a lease), %d gave up",
		rep.LoadTime.Round(time.Millisecond), rep.Payments.FirstTry, rep.Payments.Retried, rep.Payments.WaitedLease, rep.Payments.GaveUp)

	if rep.LeaseWait, err = waitLeases(ctx, d.Pool, leaseWait); err != nil {
		return rep, err
	}
	logf("no attempt charging within its lease (waited %s): two reconcile at once", rep.LeaseWait.Round(time.Millisecond))
	rc.pair(ctx, "after")
	settleStart := time.Now()
	rep.Checks, rep.Facts, err = settle(ctx, cfg.SettleTimeout, func() ([]Check, ReconcileFacts, error) {
		return checkReconcile(ctx, d.Pool, stack.Fakes, orders, loss.events())
	})
	rep.SettleTime = time.Since(settleStart)
	if err != nil {
		return rep, err
	}
	logf("settled in %s; reconcile once more, which must find nothing", rep.SettleTime.Round(time.Millisecond))
	final := rc.run(ctx, "final")
	rep.Runs, rep.CutBefore, rep.CutAfter = rc.all(), slow.cutBefore.Load(), slow.cutAfter.Load()
	rep.Checks = append(rep.Checks, runChecks(rep.Runs, final)...)
	return rep, nil
}

// payUnderKills pays the orders while the api is SIGKILLed and started
// again every cfg.KillEvery, and two reconcile run at once every
// cfg.ReconcileEvery. The kills stop once every order's first request is
// sent; the customers who retry may still wait out a lease.
func payUnderKills(ctx context.Context, cfg ReconcileConfig, pool *pgxpool.Pool, stack *bench.Stack, rc *reconciler,
	logf func(string, ...any)) ([]bench.Order, Payments, []Fault, error) {
	sent := make(chan struct{})
	start := time.Now()
	var faults []Fault
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(cfg.KillEvery)
		defer t.Stop()
		for {
			select {
			case <-sent:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			api := stack.APIProc()
			began := time.Now()
			err := api.Kill()
			if err == nil {
				_, err = stack.RestartAPI(context.WithoutCancel(ctx))
			}
			faults = append(faults, Fault{At: began.Sub(start), What: "SIGKILL " + api.Name, Err: err})
			if err != nil {
				logf("fault SIGKILL %s: %v", api.Name, err)
				return
			}
		}
	})
	reconcileCtx, stopReconcile := context.WithCancel(ctx)
	wg.Go(func() { rc.every(reconcileCtx, cfg.ReconcileEvery) })
	orders, p, err := payAll(ctx, pool, stack.API, cfg.Orders, cfg.Rate, cfg.GiveUp, sent)
	stopReconcile()
	wg.Wait()
	if err != nil {
		return orders, p, faults, fmt.Errorf("pay the orders: %w", err)
	}
	return orders, p, faults, nil
}

// waitLeases waits until no order's charge attempt is charging within its
// lease (the ones the killed apis held run out on the database's clock) and
// returns how long that took.
func waitLeases(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		rows, err := queries.New(pool).ReconcileOrders(ctx, queries.ReconcileOrdersParams{GraceMs: 1})
		if err != nil {
			return 0, fmt.Errorf("read the charge attempts: %w", err)
		}
		held := 0
		for _, r := range rows {
			count(&held, r.ChargeState.String == "charging" && !r.LeaseExpired)
		}
		switch {
		case held == 0:
			return time.Since(start), nil
		case time.Since(start) > timeout:
			return 0, fmt.Errorf("%d charge attempts still within their lease after %s", held, timeout)
		}
		pause(ctx, 500*time.Millisecond)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
}

// settle checks every two seconds until every check holds or timeout
// passes, and returns the last result.
func settle(ctx context.Context, timeout time.Duration, check func() ([]Check, ReconcileFacts, error)) ([]Check, ReconcileFacts, error) {
	deadline := time.Now().Add(timeout)
	for {
		checks, facts, err := check()
		if err == nil && allOK(checks) || time.Now().After(deadline) {
			return checks, facts, err
		}
		pause(ctx, 2*time.Second)
		if ctx.Err() != nil {
			return checks, facts, ctx.Err()
		}
	}
}
