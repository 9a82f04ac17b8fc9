package soak

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Config is one soak. Zero values take the documented defaults.
type Config struct {
	// Binary is the orderpaid binary; AdminURL a PostgreSQL URL whose role
	// may create databases (the soak gets a database of its own).
	Binary, AdminURL string
	// Broker is nats (default), postgres, amqp or kafka. With nats and no
	// NATSURL the soak starts a private nats-server (NATSServer, default
	// from PATH), so that restarting it disturbs nobody; with kafka and no
	// KafkaBrokers (a KAFKA_BROKERS list) an in-process Kafka cluster
	// (internal/lab/kafkalab), which it never restarts.
	Broker, AMQPURL, NATSURL, NATSServer, KafkaBrokers string
	// Orders is the number of orders paid (default 10000).
	Orders int
	// Duplicates is the share of orders whose webhook arrives twice
	// (default 0.3): half of them the same event again, half a second
	// event for the same payment.
	Duplicates float64
	// Refunds is the share of orders the provider also reports refunded
	// (default 0.1): a payment.refunded shuffled in with the payments, so
	// that some arrive before the payment they reverse, half of them
	// delivered twice. Every third order holds one unit of a stock-limited
	// SKU (stockSKU), so that reservations and releases run under the load.
	Refunds float64
	// BatchSize, above 1, runs the workers in batch mode
	// (CONSUMER_BATCH_SIZE).
	BatchSize int
	// Position is the workers' CONSUMER_POSITION ("": the default); with
	// config.PositionWithEffects a batch's effects and position commit
	// together.
	Position string
	// OutboxRelay is the OUTBOX_RELAY of api and workers ("": poll); with
	// config.RelayLogical every worker SIGKILL kills a relay reading the
	// slot, which must publish again from its last confirmed position.
	OutboxRelay string
	// Workers is the number of worker processes kept running (default 2).
	Workers int
	// Without switches guards off (--without on api and workers), to watch
	// the soak catch the damage; "" keeps every guard on.
	Without string
	// Rate is the webhooks per second (default 200); Senders the concurrent
	// senders (default 8).
	Rate    float64
	Senders int
	// KillEvery and RestartEvery are the periods of the worker SIGKILLs
	// and of the graceful worker restarts (defaults 3s and 7s).
	KillEvery, RestartEvery time.Duration
	// RestartPostgres restarts the local PostgreSQL once, RestartRabbitMQ
	// the local RabbitMQ app once: both disturb every other user.
	RestartPostgres, RestartRabbitMQ bool
	// SettleTimeout bounds the wait for the flow to settle after the load
	// (default 3 minutes).
	SettleTimeout time.Duration
	// LogDir receives the processes' logs. Keep keeps the database;
	// KeepOnFailure keeps it only when an invariant did not hold.
	LogDir              string
	Keep, KeepOnFailure bool
	// Progress receives a line per event; nil discards.
	Progress io.Writer
}

func (c Config) withDefaults() Config {
	c.Broker = cmp.Or(c.Broker, config.BrokerNATS)
	c.Orders = cmp.Or(c.Orders, 10_000)
	if c.Duplicates == 0 {
		c.Duplicates = 0.3
	}
	if c.Refunds == 0 {
		c.Refunds = 0.1
	}
	c.Workers = cmp.Or(c.Workers, 2)
	c.Rate = cmp.Or(c.Rate, 200)
	c.Senders = cmp.Or(c.Senders, 8)
	c.KillEvery = cmp.Or(c.KillEvery, 3*time.Second)
	c.RestartEvery = cmp.Or(c.RestartEvery, 7*time.Second)
	c.SettleTimeout = cmp.Or(c.SettleTimeout, 3*time.Minute)
	c.Progress = cmp.Or[io.Writer](c.Progress, io.Discard)
	return c
}

// postgresAddr is the host:port of the server of AdminURL.
func (c Config) postgresAddr() string {
	u, err := url.Parse(c.AdminURL)
	if err != nil || u.Host == "" {
		return "127.0.0.1:5432"
	}
	if u.Port() == "" {
		return u.Host + ":5432"
	}
	return u.Host
}

// Run runs one soak and returns its report. An error means the soak could
// not run; a soak that ran and found a violation returns a Report whose
// Passed is false.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	cfg = cfg.withDefaults()
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.Progress, "soak: "+format+"\n", args...) }
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return rep, fmt.Errorf("create log directory %s: %w", cfg.LogDir, err)
	}
	d, err := bench.CreateDatabase(ctx, cfg.AdminURL, "orderpaid_soak")
	if err != nil {
		return rep, err
	}
	defer func() {
		if cfg.Keep || cfg.KeepOnFailure && !rep.Passed() {
			logf("kept database %s", d.Name)
			d.Pool.Close()
			return
		}
		err = errors.Join(err, d.Drop())
	}()
	orders, err := bench.SeedPendingOrders(ctx, d.Pool, cfg.Orders)
	if err != nil {
		return rep, err
	}
	mix, err := seedStock(ctx, d.Pool, orders, cfg.Refunds)
	if err != nil {
		return rep, err
	}
	mix.fromWAL = cfg.OutboxRelay == config.RelayLogical
	if err := d.Settle(ctx, "orders"); err != nil {
		logf("warning: %v", err)
	}

	own, err := startOwnBroker(ctx, cfg.Broker, cfg.NATSServer, cfg.LogDir, &cfg.NATSURL, &cfg.KafkaBrokers, logf)
	if err != nil {
		return rep, err
	}
	defer own.stop()
	prefix := "s" + bench.RandomHex(4) + "_"
	in := &injector{cfg: cfg, logger: logf, own: own, prefix: prefix}
	defer func() {
		err = errors.Join(err, bench.DeleteTopology(cfg.Broker, cfg.AMQPURL, cfg.NATSURL, cfg.KafkaBrokers, prefix))
	}()
	stack, err := bench.StartStack(ctx, bench.StackConfig{
		Binary: cfg.Binary, LogDir: cfg.LogDir, DatabaseURL: d.URL, Workers: cfg.Workers,
		Broker: cfg.Broker, AMQPURL: cfg.AMQPURL, NATSURL: cfg.NATSURL, KafkaBrokers: cfg.KafkaBrokers, Prefix: prefix, Without: cfg.Without,
		BatchSize: cfg.BatchSize, Position: cfg.Position, OutboxRelay: cfg.OutboxRelay,
	})
	if err != nil {
		return rep, err
	}
	defer func() { _ = stack.Stop() }() // workers stopped by the faults may have exited already
	in.stack = stack

	deliveries, redelivered, second := withDuplicates(orders, prefix, cfg.Duplicates)
	deliveries = withRefunds(deliveries, mix, prefix)
	rep = Report{Config: cfg, KafkaInProcess: own.kafka != nil, Database: d.Name, Deliveries: len(deliveries), Redelivered: redelivered, SecondEvents: second}
	logf("%d orders (%d hold a unit of %s, %d refunded), %d webhook deliveries (%d redeliveries, %d second events) at %.0f/s; %d workers; logs in %s",
		len(orders), len(mix.stocked), stockSKU, len(mix.refunded), len(deliveries), redelivered, second, cfg.Rate, cfg.Workers, cfg.LogDir)

	faultCtx, stopFaults := context.WithCancel(ctx)
	faultsDone := make(chan struct{})
	in.start = time.Now()
	go func() {
		defer close(faultsDone)
		in.run(faultCtx, time.Duration(float64(len(deliveries))/cfg.Rate*float64(time.Second)))
	}()
	load, err := bench.Send(ctx, bench.LoadConfig{API: stack.API, Secret: []byte(stack.Secret), Senders: cfg.Senders, Rate: cfg.Rate}, deliveries)
	stopFaults()
	<-faultsDone
	if err != nil {
		return rep, fmt.Errorf("deliver webhooks: %w", err)
	}
	rep.LoadTime, rep.Retries, rep.Faults = load.End.Sub(load.Start), load.Retries, in.Faults()
	in.replace(ctx)
	logf("load delivered in %s (%d refused and retried); waiting for the flow to settle", rep.LoadTime.Round(time.Millisecond), load.Retries)

	settleStart := time.Now()
	rep.Checks, rep.Executions, err = waitSettled(ctx, d.Pool, stack.Fakes, orders, mix, cfg.SettleTimeout)
	rep.SettleTime = time.Since(settleStart)
	return rep, err
}

// withDuplicates gives each order one webhook and a share dup of them a
// second delivery: half the same event id again (a provider redelivery),
// half a new event id (a second event for one payment). The deliveries are
// shuffled, so a duplicate may come before or long after its original.
func withDuplicates(orders []bench.Order, runID string, dup float64) (out []bench.Delivery, redelivered, second int) {
	out = bench.Deliveries(orders, runID)
	n := int(float64(len(orders)) * dup)
	for i, o := range orders[:n] {
		if i%2 == 0 {
			out = append(out, out[i])
			redelivered++
		} else {
			out = append(out, bench.Delivery{Order: o, EventID: fmt.Sprintf("evt_%s_%d_again", runID, i)})
			second++
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, redelivered, second
}

// stockSKU is the soak's stock-limited SKU.
const stockSKU = "soak-sku"

// mix says which orders hold a unit of stockSKU and which are refunded.
type mix struct {
	initial  int64
	stocked  map[uuid.UUID]bool
	refunded map[uuid.UUID]bool
	// fromWAL: the outbox is relayed from a replication slot, which has no
	// backlog of rows to check (see check).
	fromWAL bool
}

// seedStock gives every third order one unit of stockSKU, sets its stock to
// exactly what they need (a limit the flow must never pass: no unit to
// spare) and picks the share refunds of the orders to refund, spread over
// stocked and other orders alike.
func seedStock(ctx context.Context, pool *pgxpool.Pool, orders []bench.Order, refunds float64) (mix, error) {
	m := mix{stocked: map[uuid.UUID]bool{}, refunded: map[uuid.UUID]bool{}}
	var ids []uuid.UUID
	for i, o := range orders {
		if i%3 == 0 {
			ids = append(ids, o.ID)
			m.stocked[o.ID] = true
		}
	}
	m.initial = int64(len(ids))
	if _, err := queries.New(pool).StockSet(ctx, queries.StockSetParams{Sku: stockSKU, Available: int32(m.initial)}); err != nil {
		return m, fmt.Errorf("set the stock of %s: %w", stockSKU, err)
	}
	if _, err := labqueries.New(pool).SoakSeedItems(ctx, labqueries.SoakSeedItemsParams{Sku: stockSKU, OrderIds: ids}); err != nil {
		return m, fmt.Errorf("give %d orders a unit of %s: %w", len(ids), stockSKU, err)
	}
	every := 0
	if refunds > 0 {
		every = max(int(1/refunds), 1)
	}
	for i, o := range orders {
		if every > 0 && i%every == 1%every {
			m.refunded[o.ID] = true
		}
	}
	return m, nil
}

// withRefunds adds a payment.refunded for every refunded order of m, half
// of them twice (a redelivery), and shuffles them in with deliveries: a
// refund may come before the payment it reverses.
func withRefunds(deliveries []bench.Delivery, m mix, runID string) []bench.Delivery {
	i := 0
	seen := map[uuid.UUID]bool{}
	for _, d := range deliveries {
		if !m.refunded[d.Order.ID] || seen[d.Order.ID] {
			continue
		}
		seen[d.Order.ID] = true
		r := bench.Delivery{Order: d.Order, EventID: fmt.Sprintf("evt_%s_%d_refund", runID, i), Type: webhook.EventPaymentRefunded}
		deliveries = append(deliveries, r)
		if i%2 == 0 {
			deliveries = append(deliveries, r)
		}
		i++
	}
	rand.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	return deliveries
}
