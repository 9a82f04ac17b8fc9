package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/soak"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// soakBrokers are the brokers the soak and the bench run on.
var soakBrokers = []string{config.BrokerPostgres, config.BrokerAMQP, config.BrokerNATS, config.BrokerKafka}

// errSoakFailed is returned when an invariant did not hold; the report
// above it says which.
var errSoakFailed = errors.New("soak: invariants violated (see the report above)")

// runSoak pays many orders through real processes while killing and
// restarting them, then checks every invariant. See internal/lab/soak.
func runSoak(e env) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	brokerName := fs.String("broker", config.BrokerNATS, "nats (a private nats-server the soak restarts), postgres, amqp or kafka (KAFKA_BROKERS, else an in-process cluster)")
	orders := fs.Int("orders", 10_000, "orders to pay (with --reconcile: default 1000)")
	duplicates := fs.Float64("duplicates", 0.3, "share of orders whose webhook is delivered twice (0 to 1)")
	refunds := fs.Float64("refunds", 0.1, "share of orders the provider also reports refunded, shuffled in with the payments (0 to 1)")
	workers := fs.Int("workers", 2, "worker processes kept running")
	batch := fs.Int("batch", 0, "run the workers in batch mode, this many messages per transaction (CONSUMER_BATCH_SIZE)")
	relay := fs.String("relay", config.RelayPoll, "the OUTBOX_RELAY of api and workers: poll, or logical (the relay reads a replication slot, and each worker SIGKILL kills it mid-stream; needs wal_level = logical)")
	position := fs.String("position", "", "with --batch and --broker postgres or kafka: with-effects commits a batch's position with its effects (CONSUMER_POSITION)")
	rate := fs.Float64("rate", 200, "webhooks per second (with --reconcile: orders created and paid per second, default 25)")
	killEvery := fs.Duration("kill-every", 3*time.Second, "SIGKILL a random worker this often (with --reconcile: the api, started again at once)")
	restartEvery := fs.Duration("restart-every", 7*time.Second, "restart a random worker gracefully (SIGTERM: its relay too) this often")
	restartPostgres := fs.Bool("restart-postgres", false, "restart the local PostgreSQL once (disturbs every other user of the server)")
	restartRabbitMQ := fs.Bool("restart-rabbitmq", false, "with --broker amqp: restart the local RabbitMQ app once (disturbs every other user)")
	settle := fs.Duration("settle-timeout", 3*time.Minute, "how long the flow may take to settle after the load")
	logDir := fs.String("logs", "", "directory for the processes' logs (default: a new temporary directory)")
	keep := fs.Bool("keep", false, "keep the soak's database even when every invariant held")
	withoutList := fs.String("without", "", "switch guards off in api and workers to watch the soak catch the damage: "+strings.Join(switches.Names(), ", "))
	rf := reconcileFlags(fs)
	if err := parseFlags(fs, e, "[flags]"); err != nil {
		return helpOK(err)
	}
	if *rf.on {
		return runReconcileSoak(e, fs, rf, soak.ReconcileConfig{
			Broker: *brokerName, Orders: *orders, Rate: *rate, Workers: *workers, KillEvery: *killEvery,
			SettleTimeout: *settle, LogDir: *logDir, Keep: *keep,
		})
	}
	if set := setFlags(fs, rf.only...); len(set) > 0 {
		return usageError{Err: fmt.Errorf("soak: --%s: only with --reconcile", set[0])}
	}
	c := soak.Config{
		Broker: *brokerName, Orders: *orders, Duplicates: *duplicates, Refunds: *refunds, BatchSize: *batch, Position: *position, OutboxRelay: *relay, Workers: *workers, Without: *withoutList, Rate: *rate,
		KillEvery: *killEvery, RestartEvery: *restartEvery,
		RestartPostgres: *restartPostgres, RestartRabbitMQ: *restartRabbitMQ,
		SettleTimeout: *settle, Keep: *keep, KeepOnFailure: true, Progress: e.Stderr,
	}
	if err := checkSoak(c); err != nil {
		return err
	}
	cfg, _, err := loadConfig(e)
	if err != nil {
		return err
	}
	c.AdminURL, c.AMQPURL, c.KafkaBrokers = cfg.DatabaseURL, cfg.AMQPURL, kafkaBrokersSet(cfg)
	if c.Binary, c.LogDir, err = processes("soak", *logDir); err != nil {
		return err
	}
	rep, err := soak.Run(e.Ctx, c)
	if err != nil {
		return fmt.Errorf("%w (process logs in %s)", err, c.LogDir)
	}
	rep.Print(e.Stdout)
	if !rep.Passed() {
		return errSoakFailed
	}
	return nil
}

// soakReconcileFlags are the flags of `orderpaid-lab soak --reconcile`.
type soakReconcileFlags struct {
	on                         *bool
	dropWebhooks, giveUp       *float64
	grace, every, gatewayDelay *time.Duration
	only, notWith              []string // flags of the mode only; flags of the other soak only
}

func reconcileFlags(fs *flag.FlagSet) soakReconcileFlags {
	return soakReconcileFlags{
		on: fs.Bool("reconcile", false, "the reconcile soak: customers pay orders through the api (POST /orders/{id}/payments) while the api is SIGKILLed, "+
			"a share of the webhooks never arrives, and two orderpaid reconcile processes run at once during the load and after it; the last run must find nothing"),
		dropWebhooks: fs.Float64("drop-webhooks", 0.1, "with --reconcile: share of payment.succeeded webhooks that never arrive (above 0, below 1)"),
		giveUp:       fs.Float64("give-up", 0.5, "with --reconcile: share of customers who never retry a payment that got no answer (above 0, up to 1)"),
		grace:        fs.Duration("grace", 2*time.Second, "with --reconcile: reconcile's --grace"),
		every:        fs.Duration("reconcile-every", 6*time.Second, "with --reconcile: run two reconcile at once this often during the load"),
		gatewayDelay: fs.Duration("gateway-delay", 200*time.Millisecond, "with --reconcile: how long a charge takes to reach the gateway, and its answer to come back"),
		only:         []string{"drop-webhooks", "give-up", "grace", "reconcile-every", "gateway-delay"},
		notWith:      []string{"duplicates", "refunds", "batch", "position", "relay", "restart-every", "restart-postgres", "restart-rabbitmq", "without"},
	}
}

// setFlags returns those of names that were set on the command line.
func setFlags(fs *flag.FlagSet, names ...string) []string {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(names, f.Name) {
			set = append(set, f.Name)
		}
	})
	return set
}

// runReconcileSoak runs `orderpaid-lab soak --reconcile` with the flags it
// shares with the other soak in c. See internal/lab/soak.RunReconcile.
func runReconcileSoak(e env, fs *flag.FlagSet, rf soakReconcileFlags, c soak.ReconcileConfig) error {
	if len(setFlags(fs, "orders")) == 0 {
		c.Orders = 1000
	}
	if len(setFlags(fs, "rate")) == 0 {
		c.Rate = 25
	}
	switch set := setFlags(fs, rf.notWith...); {
	case len(set) > 0:
		return usageError{Err: fmt.Errorf("soak: --%s does not apply with --reconcile", set[0])}
	case !slices.Contains(soakBrokers, c.Broker):
		return usageError{Err: fmt.Errorf("soak: --broker %q: want nats, postgres, amqp or kafka", c.Broker)}
	case c.Orders < 1 || c.Workers < 1 || c.Rate <= 0:
		return usageError{Err: errors.New("soak: --orders, --workers and --rate must be positive")}
	case *rf.dropWebhooks <= 0 || *rf.dropWebhooks >= 1 || *rf.giveUp <= 0 || *rf.giveUp > 1:
		return usageError{Err: fmt.Errorf("soak: --drop-webhooks %v, --give-up %v: want shares above 0, below 1 (--give-up: up to 1)", *rf.dropWebhooks, *rf.giveUp)}
	case c.KillEvery <= 0 || c.SettleTimeout <= 0 || *rf.grace <= 0 || *rf.every <= 0 || *rf.gatewayDelay <= 0:
		return usageError{Err: errors.New("soak: --kill-every, --settle-timeout, --grace, --reconcile-every and --gateway-delay must be positive durations")}
	}
	cfg, _, err := loadConfig(e)
	if err != nil {
		return err
	}
	if c.Binary, err = os.Executable(); err != nil {
		return fmt.Errorf("soak: find the orderpaid binary to start: %w", err)
	}
	if c.LogDir == "" {
		if c.LogDir, err = os.MkdirTemp("", "orderpaid-soak-"); err != nil {
			return fmt.Errorf("soak: create a log directory (set --logs): %w", err)
		}
	}
	c.AdminURL, c.AMQPURL, c.KafkaBrokers = cfg.DatabaseURL, cfg.AMQPURL, kafkaBrokersSet(cfg)
	c.GatewayDelay, c.DropWebhooks, c.GiveUp, c.Grace, c.ReconcileEvery = *rf.gatewayDelay, *rf.dropWebhooks, *rf.giveUp, *rf.grace, *rf.every
	c.KeepOnFailure, c.Progress = true, e.Stderr
	rep, err := soak.RunReconcile(e.Ctx, c)
	if err != nil {
		return fmt.Errorf("%w (process logs in %s)", err, c.LogDir)
	}
	rep.Print(e.Stdout)
	if !rep.Passed() {
		return errSoakFailed
	}
	return nil
}

// checkSoak refuses a soak whose flags contradict each other or name
// nothing, before any process starts.
func checkSoak(c soak.Config) error {
	switch {
	case !slices.Contains(soakBrokers, c.Broker):
		return usageError{Err: fmt.Errorf("soak: --broker %q: want nats, postgres, amqp or kafka", c.Broker)}
	case c.Orders < 1 || c.Workers < 1 || c.Rate <= 0:
		return usageError{Err: errors.New("soak: --orders, --workers and --rate must be positive")}
	case c.Duplicates < 0 || c.Duplicates > 1:
		return usageError{Err: fmt.Errorf("soak: --duplicates %v: want a share between 0 and 1", c.Duplicates)}
	case c.KillEvery <= 0 || c.RestartEvery <= 0 || c.SettleTimeout <= 0:
		return usageError{Err: errors.New("soak: --kill-every, --restart-every and --settle-timeout must be positive durations")}
	case c.OutboxRelay != config.RelayPoll && c.OutboxRelay != config.RelayLogical:
		return usageError{Err: fmt.Errorf("soak: --relay %q: want poll or logical", c.OutboxRelay)}
	case c.RestartRabbitMQ && c.Broker != config.BrokerAMQP:
		return usageError{Err: errors.New("soak: --restart-rabbitmq needs --broker amqp")}
	}
	if _, err := switches.Parse(c.Without); err != nil {
		return usageError{Err: fmt.Errorf("soak: --without: %w", err)}
	}
	if c.Position != "" {
		// The workers' own check, before any process starts.
		env := map[string]string{"BROKER": c.Broker, "CONSUMER_BATCH_SIZE": fmt.Sprint(max(c.BatchSize, 1)), "CONSUMER_POSITION": c.Position}
		if _, err := config.Load(func(k string) string { return env[k] }); err != nil {
			return usageError{Err: fmt.Errorf("soak: --position: %w", err)}
		}
	}
	return nil
}
