package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Config is one benchmark invocation.
type Config struct {
	// Binary is the orderpaid binary started for api, worker and fakes.
	Binary string
	// AdminURL is a PostgreSQL URL whose role may create databases; every
	// run gets a database of its own on that server.
	AdminURL string
	// Broker is postgres, amqp, nats or kafka; AMQPURL, NATSURL and
	// KafkaBrokers (a KAFKA_BROKERS list) locate the last three. With kafka
	// and no KafkaBrokers, Suite starts an in-process cluster
	// (internal/lab/kafkalab) for the invocation.
	Broker, AMQPURL, NATSURL, KafkaBrokers string
	// kafkaInProcess is set by Suite when the cluster of KafkaBrokers runs
	// in this process: its CPU is then the load generator's, and the report
	// names that column bench+kafka.
	kafkaInProcess bool
	// Relay is the OUTBOX_RELAY of every run's api and worker: poll (the
	// default) or logical (the relay from the WAL, which Suite refuses at
	// once where the server's wal_level is not logical).
	Relay string
	// LogDir receives the processes' logs.
	LogDir string
	// Orders is the number of orders per run (default 5000).
	Orders int
	// Senders is the number of concurrent webhook senders (default 16).
	Senders int
	// CeilingWorkers and CeilingTxs size the ceiling measurement
	// (default 16 goroutines, Orders transactions).
	CeilingWorkers, CeilingTxs int
	// Keep keeps each run's database for inspection.
	Keep bool
	// Progress receives a line per step; nil discards.
	Progress io.Writer
}

func (c Config) withDefaults() Config {
	c.Broker = cmp.Or(c.Broker, config.BrokerPostgres)
	c.Relay = cmp.Or(c.Relay, config.RelayPoll)
	c.Orders = cmp.Or(c.Orders, 5000)
	c.Senders = cmp.Or(c.Senders, 16)
	c.CeilingWorkers = cmp.Or(c.CeilingWorkers, 16)
	c.CeilingTxs = cmp.Or(c.CeilingTxs, c.Orders)
	c.Progress = cmp.Or[io.Writer](c.Progress, io.Discard)
	return c
}

// Spec is one measured run.
type Spec struct {
	// Name labels the run in the report.
	Name string
	// Without is the --without list of api and worker ("" = every guard on).
	Without string
	// Rate paces the webhooks (per second); 0 sends as fast as accepted.
	Rate float64
	// InboxRows rows are seeded into each inbox (webhook and consumer)
	// before the run, to show whether the lookups stay flat.
	InboxRows int
	// BatchSize, above 1, runs the workers in batch mode
	// (CONSUMER_BATCH_SIZE).
	BatchSize int
}

// Result is what one run measured.
type Result struct {
	Spec
	Orders int
	// Elapsed runs from the first webhook sent to the last notification sent.
	Elapsed time.Duration
	// E2E are the per-order latencies, webhook accepted to notification sent.
	E2E Latencies
	// RelayLag is the workers' relay lag histogram over the run.
	RelayLag Histogram
	Effects  Effects
	Usage    []Usage
	Retries  int64
}

// Throughput is orders per second end to end.
func (r Result) Throughput() float64 { return float64(r.Orders) / r.Elapsed.Seconds() }

// RunOne measures one Spec on a fresh database.
func RunOne(ctx context.Context, cfg Config, spec Spec) (res Result, err error) {
	cfg = cfg.withDefaults()
	progress := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "bench: %s: "+format+"\n", append([]any{spec.Name}, args...)...)
	}
	d, err := CreateDatabase(ctx, cfg.AdminURL, "orderpaid_bench")
	if err != nil {
		return Result{}, err
	}
	if !cfg.Keep {
		defer func() { err = errors.Join(err, d.Drop()) }()
	}
	orders, err := SeedPendingOrders(ctx, d.Pool, cfg.Orders)
	if err != nil {
		return Result{}, err
	}
	seeded := []string{"orders"}
	if spec.InboxRows > 0 {
		progress("seeding %d rows into each inbox (about a minute per million)", spec.InboxRows)
		start := time.Now()
		if err := SeedInboxes(ctx, d.Pool, spec.InboxRows, func(done int) {
			progress("seeded %d of %d rows into each inbox (%s)", done, spec.InboxRows, time.Since(start).Round(time.Second))
		}); err != nil {
			return Result{}, err
		}
		seeded = append(seeded, "webhook_inbox", "consumer_inbox")
	}
	if err := d.Settle(ctx, seeded...); err != nil {
		progress("warning: %v", err)
	}
	prefix := "b" + RandomHex(4) + "_"
	defer func() {
		err = errors.Join(err, DeleteTopology(cfg.Broker, cfg.AMQPURL, cfg.NATSURL, cfg.KafkaBrokers, prefix))
	}()
	logDir, err := runLogDir(cfg.LogDir, spec.Name)
	if err != nil {
		return Result{}, err
	}
	stack, err := StartStack(ctx, StackConfig{
		Binary: cfg.Binary, LogDir: logDir, DatabaseURL: d.URL,
		Broker: cfg.Broker, AMQPURL: cfg.AMQPURL, NATSURL: cfg.NATSURL, KafkaBrokers: cfg.KafkaBrokers, Prefix: prefix, Without: spec.Without,
		BatchSize: spec.BatchSize, OutboxRelay: cfg.Relay,
	})
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, stack.Stop()) }()

	progress("sending %d webhooks (database %s, logs in %s)", len(orders), d.Name, logDir)
	before := takeUsage(stack, cfg)
	load, err := Send(ctx, LoadConfig{API: stack.API, Secret: []byte(stack.Secret), Senders: cfg.Senders, Rate: spec.Rate},
		Deliveries(orders, prefix))
	if err != nil {
		return Result{}, err
	}
	want := make(map[uuid.UUID]bool, len(orders))
	for _, o := range orders {
		want[o.ID] = true
	}
	sent, err := WaitNotified(ctx, d.Pool, stack.Fakes, want, 2*time.Minute+time.Duration(len(orders))*20*time.Millisecond)
	if err != nil {
		return Result{}, err
	}
	after := takeUsage(stack, cfg)
	e2e, last := EndToEnd(load.Accepted, sent)
	res = Result{Spec: spec, Orders: len(orders), Elapsed: last.Sub(load.Start), E2E: e2e, Retries: load.Retries}
	res.Usage = usageBetween(before, after, res.Elapsed)
	if res.RelayLag, err = ScrapeHistogram(ctx, stack.MetricsURLs(), relayLagMetric); err != nil {
		return Result{}, err
	}
	if res.Effects, err = CountEffects(ctx, d.Pool, orders, sent); err != nil {
		return Result{}, err
	}
	progress("%d orders in %s: %.0f orders/s", res.Orders, res.Elapsed.Round(time.Millisecond), res.Throughput())
	return res, nil
}

// relayLagMetric is orderpaid.outbox.relay.lag as Prometheus names it.
const relayLagMetric = "orderpaid_outbox_relay_lag_seconds"

// runLogDir creates the log directory of one run: dir/<run name>.
func runLogDir(dir, run string) (string, error) {
	path := filepath.Join(dir, strings.ReplaceAll(run, " ", "-"))
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", fmt.Errorf("create log directory %s: %w", path, err)
	}
	return path, nil
}
