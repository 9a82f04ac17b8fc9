package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// Broker is one connection to the configured broker.
type Broker struct {
	// Name is postgres, amqp, nats or kafka.
	Name string
	// Publisher publishes to the broker (the relay's output).
	Publisher message.Publisher
	// BatchPublisher publishes many messages per call faster than
	// Publisher where the broker allows it (RabbitMQ: amqpBatchPublisher,
	// pipelined confirms); Publisher otherwise.
	BatchPublisher message.Publisher

	newSubscriber func(consumerGroup string) (message.Subscriber, error)
	// batchSource returns the broker's BatchSource of a (prefixed) topic.
	batchSource func(topic, consumerGroup string, size int) (BatchSource, error)
	// pool is the postgres broker's database (nil on the others); prefix
	// is BROKER_PREFIX. A BatchReader needs both.
	pool    *pgxpool.Pool
	prefix  string
	ping    func(ctx context.Context) error
	closers []func() error

	// provision creates a consumer group's destination; nil means
	// initializeSubscriber (see provision.go).
	provision func(topic, consumerGroup string) error
	// faults are the fault points the broker hits (Kafka's
	// FaultBeforeOffsetCommit); nil in production.
	faults *fault.Set
}

// WithFaults arms the broker's fault points for the subscribers and batch
// readers made after it (tests and scenarios only, as every fault point).
func (b *Broker) WithFaults(faults *fault.Set) *Broker {
	b.faults = faults
	return b
}

// New connects to the broker named in cfg.Broker.
// With cfg.BrokerPrefix set, every topic is prefixed on the broker (see
// withPrefix).
func New(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger watermill.LoggerAdapter) (*Broker, error) {
	var b *Broker
	var err error
	switch cfg.Broker {
	case config.BrokerPostgres:
		b, err = newPostgres(pool, logger)
	case config.BrokerAMQP:
		b, err = newAMQP(ctx, cfg.AMQPURL, logger)
	case config.BrokerNATS:
		b, err = newNATS(ctx, cfg.NATSURL, logger)
	case config.BrokerKafka:
		b, err = newKafka(ctx, cfg.KafkaBrokers, logger)
	default:
		return nil, fmt.Errorf("unknown broker %q: want postgres, amqp, nats or kafka", cfg.Broker)
	}
	if err != nil {
		return nil, err
	}
	if cfg.BrokerPrefix != "" {
		b.withPrefix(cfg.BrokerPrefix)
	}
	return b, nil
}

// Subscriber returns a subscriber for one consumer group: every group gets
// each message once (at least once), members of one group share the work.
func (b *Broker) Subscriber(consumerGroup string) (message.Subscriber, error) {
	sub, err := b.newSubscriber(consumerGroup)
	if err != nil {
		return nil, fmt.Errorf("subscribe as %s on %s: %w", consumerGroup, b.Name, err)
	}
	b.closers = append(b.closers, sub.Close)
	return sub, nil
}

// Provision makes sure the destination of one consumer group on one topic
// exists (a queue, a durable consumer, tables) so that messages published
// from now on wait for that group even if none of its members has subscribed
// yet. Call it at start-up, for every (topic, group) this process consumes,
// before the relay or anything else publishes to the topic: without it a
// RabbitMQ fanout exchange with no queue bound confirms and drops a message.
// It is idempotent and safe to call from several replicas at once.
func (b *Broker) Provision(topic, consumerGroup string) error {
	provision := b.provision
	if provision == nil {
		provision = b.initializeSubscriber
	}
	if err := provision(topic, consumerGroup); err != nil {
		return fmt.Errorf("provision %s for %s on %s: %w", topic, consumerGroup, b.Name, err)
	}
	return nil
}

// Ping reports whether the broker is reachable now (for /readyz).
func (b *Broker) Ping(ctx context.Context) error {
	if err := b.ping(ctx); err != nil {
		return fmt.Errorf("broker %s: %w", b.Name, err)
	}
	return nil
}

// Close closes the publishers, the subscribers and the connection.
func (b *Broker) Close() error {
	errs := []error{b.Publisher.Close()}
	if b.BatchPublisher != nil && b.BatchPublisher != b.Publisher {
		errs = append(errs, b.BatchPublisher.Close())
	}
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	return errors.Join(errs...)
}
