package app

import (
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/poison"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// startWorker provisions the consumers' queues, then starts the outbox's
// relay and the consumers: a router of one message at a time, or batch
// loops (CONSUMER_BATCH_SIZE > 1).
func (s *serving) startWorker(ctx context.Context, g *errgroup.Group, pool *pgxpool.Pool, b *broker.Broker) error {
	if err := s.prepareWorker(ctx, pool, b); err != nil {
		return err
	}
	consumers, err := s.consumers(pool, b)
	if err != nil {
		return err
	}
	batches, skip, err := s.batchLoops(pool, b, consumers)
	if err != nil {
		return err
	}
	inner, err := s.levers.inner(s.wmLogger)
	if err != nil {
		return err
	}
	router, err := consumer.NewRouter(b, consumers, poison.NewStore(queries.New(pool)), s.wmLogger, consumer.RouterConfig{
		CloseTimeout: s.cfg.ShutdownTimeout,
		Outer:        []message.HandlerMiddleware{telemetry.ConsumerMiddleware(s.tel.TracerProvider, telemetry.MessagingSystem(b.Name))},
		Inner:        inner,
		Skip:         skip,
	})
	if err != nil {
		return err
	}
	if err := s.startRelay(ctx, g, pool, b); err != nil {
		return err
	}
	if len(router.Handlers()) > 0 {
		// (In batch mode the batch loops read every topic: a router
		// without handlers would wait for a Close that never comes.)
		g.Go(func() error { return router.Run(ctx) })
	}
	for _, l := range batches {
		g.Go(func() error { return l.Run(ctx) })
	}
	if !s.p.API {
		if err := serveWorkerMetrics(ctx, g, s.e, s.cfg, s.tel, s.logger); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.e.Stdout, "worker running (broker %s)\n", b.Name)
	return nil
}

// prepareWorker checks the pool is large enough and that no message is
// stranded on a broker left behind, then provisions the consumers' queues.
func (s *serving) prepareWorker(ctx context.Context, pool *pgxpool.Pool, b *broker.Broker) error {
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
	if err := broker.RefuseStrandedMessages(ctx, s.cfg, pool, consumer.ConsumerGroups(), s.abandonBacklog, s.logger); err != nil {
		return err
	}
	for _, sub := range consumer.Subscriptions() {
		if err := b.Provision(sub.Topic, sub.Group); err != nil {
			return err
		}
	}
	b.WithFaults(s.levers.Faults) // Kafka's FaultBeforeOffsetCommit
	return nil
}

// consumers are the worker's handlers, with the providers' clients, and the
// gauges of what waits for them.
func (s *serving) consumers(pool *pgxpool.Pool, b *broker.Broker) (*consumer.Consumers, error) {
	tel := s.tel
	notifier := notify.NewClient(s.cfg.FakesURL, tel.HTTPClient(10*time.Second))
	gateway := payment.NewGatewayClient(s.cfg.FakesURL, tel.HTTPClient(10*time.Second))
	c := consumer.NewConsumers(pool, notifier).WithGateway(gateway).
		WithFaults(s.levers.Faults).WithTelemetry(tel.Metrics, s.logger)
	c = s.levers.consumers(c, b.Publisher)
	outboxBacklog := queries.New(pool).OutboxBacklog
	if s.cfg.OutboxRelay == config.RelayLogical {
		// The polling relay's backlog would count rows past positions it no
		// longer moves: the slot's lag is the backlog here.
		outboxBacklog = nil
		if err := telemetry.ObserveSlot(tel.MeterProvider, func(ctx context.Context) (int64, int64, bool, error) { return outbox.SlotLag(ctx, pool) }); err != nil {
			return nil, err
		}
	}
	return c, telemetry.ObserveQueues(tel.MeterProvider, outboxBacklog, queries.New(pool).PoisonCountPending)
}

// batchLoops are the worker's readers in batch mode (CONSUMER_BATCH_SIZE >
// 1), and the topics they read, which the router then skips: every topic
// is read N at a time. order_paid and order_confirmed have their guards
// applied to the set (consumer.HandleOrderPaidBatch,
// HandleOrderConfirmedBatch); order_refunded and refund_requested, rare,
// are handled message by message in one transaction per batch
// (consumer.InOneTransaction), and refund_confirmed, an e-mail whose claim
// must commit before the provider's call, one message at a time
// (consumer.OneAtATime).
func (s *serving) batchLoops(pool *pgxpool.Pool, b *broker.Broker, c *consumer.Consumers) (loops []*consumer.BatchLoop, topics []string, err error) {
	n := s.cfg.ConsumerBatchSize
	if n <= 1 {
		return nil, nil, nil
	}
	for _, bt := range []struct {
		topic, group string
		handle       func([]*message.Message) []error
		one          func(*message.Message) error
	}{
		{messages.TopicOrderPaid, consumer.HandlerOrderPaid, c.Batched((*consumer.Consumers).HandleOrderPaidBatch), c.HandleOrderPaid},
		{messages.TopicOrderConfirmed, consumer.HandlerOrderConfirmed, c.Batched((*consumer.Consumers).HandleOrderConfirmedBatch), c.HandleOrderConfirmed},
		{messages.TopicOrderRefunded, consumer.HandlerOrderRefunded, c.Batched(consumer.InOneTransaction((*consumer.Consumers).HandleOrderRefunded)), c.HandleOrderRefunded},
		{messages.TopicRefundRequested, consumer.HandlerRefundRequested, c.Batched(consumer.InOneTransaction((*consumer.Consumers).HandleRefundRequested)), c.HandleRefundRequested},
		{messages.TopicRefundConfirmed, consumer.HandlerRefundConfirmed, c.Batched(consumer.OneAtATime((*consumer.Consumers).HandleRefundConfirmed)), c.HandleRefundConfirmed},
	} {
		reader, err := b.BatchReader(bt.topic, bt.group, n)
		if s.cfg.ConsumerPosition == config.PositionWithEffects {
			reader, err = b.BatchReaderWithEffects(pool, bt.topic, bt.group, n)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("CONSUMER_BATCH_SIZE=%d: %w", n, err)
		}
		topics = append(topics, bt.topic)
		loops = append(loops, &consumer.BatchLoop{
			// With a guard off, one message at a time (the lab's Batches).
			Reader: reader, Topic: bt.topic, Group: bt.group, Handle: s.levers.batches(bt.handle, bt.one),
			Poison: poison.NewStore(queries.New(postgres.Routed{Pool: pool})), Logger: s.logger,
			Drain:  s.cfg.ShutdownTimeout * 3 / 4, // as broker.NewDraining's
			Tracer: s.tel.TracerProvider, System: telemetry.MessagingSystem(b.Name),
		})
	}
	s.logger.Info("batch mode: every topic read and applied in batches", "consumer_batch_size", n, "consumer_position", s.cfg.ConsumerPosition)
	return loops, topics, nil
}

// startRelay starts the outbox's relay: from the WAL
// (OUTBOX_RELAY=logical), in batches (batch mode) or a message per publish.
func (s *serving) startRelay(ctx context.Context, g *errgroup.Group, pool *pgxpool.Pool, b *broker.Broker) error {
	rc := outbox.RelayConfig{
		CloseTimeout: s.cfg.ShutdownTimeout, TracerProvider: s.tel.TracerProvider, System: telemetry.MessagingSystem(b.Name), Metrics: s.tel.Metrics,
	}
	// Before the relay starts: back from OUTBOX_RELAY=logical, the polling
	// relay's lanes start where the slot stopped (while the slot, the record
	// of what it published, is still there); a slot nobody reads is warned
	// about, and the outbox's dropped when the polling relay will publish
	// all it holds.
	if s.cfg.OutboxRelay != config.RelayLogical {
		outbox.SwitchBack(ctx, pool, s.logger)
	}
	outbox.TidySlots(ctx, pool, s.cfg.OutboxRelay == config.RelayLogical, s.logger)
	switch n := s.cfg.ConsumerBatchSize; {
	case s.cfg.OutboxRelay == config.RelayLogical:
		// The outbox's inserts from the slot, a transaction at a time (in
		// batch mode through the broker's batch publisher).
		out := b.Publisher
		if n > 1 {
			out = b.BatchPublisher
		}
		rc.CloseTimeout = 0
		logical := outbox.NewLogicalRelay(pool, out, s.logger, rc).WithFaults(s.levers.Faults)
		g.Go(func() error { return logical.Run(ctx) })
	case n > 1:
		// Batch mode relays the outbox in batches too, on the same lanes
		// and positions as the relay of one message per publish.
		rc.CloseTimeout = 0
		batchRelay := outbox.NewBatchRelay(pool, b.BatchPublisher, s.logger, n, rc)
		g.Go(func() error { return batchRelay.Run(ctx) })
	default:
		relay, err := outbox.NewRelay(pool, b.Publisher, s.wmLogger, rc)
		if err != nil {
			return err
		}
		g.Go(func() error { return relay.Run(ctx) })
	}
	return nil
}
