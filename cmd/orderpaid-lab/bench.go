package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// errTargetsMissed is returned by `bench --strict` when a performance target
// (bench.Report.Targets, docs/performance.md#targets) was not met; the report
// above it says which.
var errTargetsMissed = errors.New("bench: at least one target was not met (see the targets above)")

// runBench measures the pipeline with real processes: `orderpaid-lab fakes`,
// `orderpaid api` and `orderpaid worker` (this same binary) on a fresh
// database per run, on the server of DATABASE_URL, whose role must be
// allowed to create databases. See internal/lab/bench and docs/performance.md.
func runBench(e env) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	brokerName := fs.String("broker", "", "postgres, amqp, nats or kafka (KAFKA_BROKERS, else an in-process cluster) (default: BROKER, else postgres)")
	relay := fs.String("relay", config.RelayPoll, "the OUTBOX_RELAY of api and worker: poll (the outbox table polled) or logical (its inserts read from a logical replication slot; needs wal_level = logical)")
	orders := fs.Int("orders", 5000, "orders per run")
	senders := fs.Int("senders", 16, "concurrent webhook senders")
	ceilingWorkers := fs.Int("ceiling-workers", 16, "goroutines running the ceiling transaction")
	runs := fs.String("runs", "off,half", "runs besides the ceiling and guards on, comma-separated: off (guards off), half (half load)")
	batch := fs.Int("batch", 0, "also run guards on (and off, with --runs off) in batch mode, this many messages per transaction (CONSUMER_BATCH_SIZE)")
	repeat := fs.Int("repeat", 1, "run guards on and guards off this many times, alternately; the targets use the medians")
	inboxRows := fs.Int("inbox-rows", 0, "also run with this many old rows in each inbox (the target is judged at 5000000)")
	backfill := fs.Int("backfill", 0, "also run a backfill of this many paid orders and report the worker's peak RSS (the target is judged at 1000000)")
	logDir := fs.String("logs", "", "directory for the processes' logs (default: a new temporary directory)")
	keep := fs.Bool("keep", false, "keep each run's database for inspection")
	strict := fs.Bool("strict", false, "exit 1 when a performance target (docs/performance.md#targets) is not met")
	if err := parseFlags(fs, e, "[flags]"); err != nil {
		return helpOK(err)
	}
	plan, err := benchPlan(*runs, bench.Plan{InboxRows: *inboxRows, Backfill: *backfill, Repeat: *repeat, BatchSize: *batch})
	if err != nil {
		return err
	}
	if *orders < 1 || *senders < 1 || *ceilingWorkers < 1 || *repeat < 1 || *inboxRows < 0 || *backfill < 0 {
		return usageError{Err: errors.New("bench: --orders, --senders, --ceiling-workers and --repeat must be positive; --inbox-rows and --backfill not negative")}
	}
	if *relay != config.RelayPoll && *relay != config.RelayLogical {
		return usageError{Err: fmt.Errorf("bench: --relay %q: want poll or logical", *relay)}
	}
	cfg, _, err := loadConfig(e)
	if err != nil {
		return err
	}
	if *brokerName != "" {
		cfg.Broker = *brokerName
	}
	if !slices.Contains(soakBrokers, cfg.Broker) {
		return usageError{Err: fmt.Errorf("bench: --broker %q: want postgres, amqp, nats or kafka", cfg.Broker)}
	}
	bin, logs, err := processes("bench", *logDir)
	if err != nil {
		return err
	}
	rep, err := bench.Suite(e.Ctx, bench.Config{
		Binary: bin, AdminURL: cfg.DatabaseURL, Broker: cfg.Broker, AMQPURL: cfg.AMQPURL, NATSURL: cfg.NATSURL, KafkaBrokers: kafkaBrokersSet(cfg),
		Relay: *relay, LogDir: logs, Orders: *orders, Senders: *senders, CeilingWorkers: *ceilingWorkers, Keep: *keep,
		Progress: e.Stderr,
	}, plan)
	if err != nil {
		return fmt.Errorf("%w (process logs in %s)", err, logs)
	}
	rep.Print(e.Stdout)
	fmt.Fprintf(e.Stdout, "\nprocess logs: %s\n", logs)
	if *strict && !rep.Met() {
		return errTargetsMissed
	}
	return nil
}

// benchPlan adds the runs of --runs to plan.
func benchPlan(runs string, plan bench.Plan) (bench.Plan, error) {
	for _, r := range strings.Split(runs, ",") {
		switch strings.TrimSpace(r) {
		case "off":
			plan.GuardsOff = true
		case "half":
			plan.HalfLoad = true
		case "":
		default:
			return plan, usageError{Err: fmt.Errorf("bench: --runs: unknown run %q: want off, half or both", r)}
		}
	}
	return plan, nil
}
