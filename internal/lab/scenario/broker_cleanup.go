package scenario

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/kafkalab"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// RabbitMQ, NATS and Kafka are shared by every scenario of a run, and by whatever
// else uses them: each scenario's processes work under a BROKER_PREFIX of
// their own (the runner's BROKER_PREFIX, then "scn<random>_"), and the stage
// deletes what they created under it when it closes. On the postgres broker
// the topics are tables of the scenario's database, dropped with it.

// maxScenarioPrefix is the longest BROKER_PREFIX the runner accepts: it adds
// len("scn") + 8 random hex digits + "_" to it, and a prefix may be 40
// characters (config.Load).
const maxScenarioPrefix = 40 - 12

// brokerAddrs returns the AMQP_URL, NATS_URL and KAFKA_BROKERS the
// children get: the runner's, or the defaults of config.Load.
func brokerAddrs(env map[string]string) (config.Config, error) {
	return config.Load(func(k string) string {
		if k == "AMQP_URL" || k == "NATS_URL" || k == "KAFKA_BROKERS" {
			return env[k]
		}
		return ""
	})
}

// deleteBrokerObjects deletes what the stage's processes created on broker
// under prefix: on RabbitMQ the queue of every subscription and the exchange
// of every topic, on NATS every stream whose name begins with prefix (and
// with it its consumers), on Kafka every topic and consumer group whose name
// begins with prefix.
func deleteBrokerObjects(broker string, env map[string]string, prefix string) error {
	if prefix == "" {
		return errors.New("delete broker objects: no prefix, refusing to delete everything")
	}
	addrs, err := brokerAddrs(env)
	if err != nil {
		return err
	}
	switch broker {
	case config.BrokerAMQP:
		return deleteAMQPObjects(addrs.AMQPURL, prefix)
	case config.BrokerNATS:
		_, err := deleteNATSStreams(addrs.NATSURL, prefix)
		return err
	case config.BrokerKafka:
		return kafkalab.DeleteUnder(strings.Join(addrs.KafkaBrokers, ","), prefix)
	}
	return nil
}

// deleteAMQPObjects deletes the queues and exchanges the consumers and the
// relay declare under prefix (internal/platform/broker/amqp.go: exchange
// <topic>, queue <topic>_<group>). A queue or exchange that was never
// declared is not an error.
func deleteAMQPObjects(url, prefix string) error {
	conn, err := amqp091.DialConfig(url, amqp091.Config{Dial: amqp091.DefaultDial(10 * time.Second)})
	if err != nil {
		return fmt.Errorf("delete the scenario's RabbitMQ queues (prefix %s): connect to %s: %w", prefix, config.RedactURL(url), err)
	}
	defer conn.Close()
	var errs []error
	// Each delete on a channel of its own: RabbitMQ closes a channel on
	// any error, a missing exchange included.
	do := func(what string, fn func(ch *amqp091.Channel) error) {
		ch, err := conn.Channel()
		if err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", what, err))
			return
		}
		defer ch.Close()
		var amqpErr *amqp091.Error
		if err := fn(ch); err != nil && !(errors.As(err, &amqpErr) && amqpErr.Code == amqp091.NotFound) {
			errs = append(errs, fmt.Errorf("delete %s: %w", what, err))
		}
	}
	topics := map[string]bool{}
	for _, s := range consumer.Subscriptions() {
		queue := prefix + s.Topic + "_" + s.Group
		do("RabbitMQ queue "+queue, func(ch *amqp091.Channel) error { _, err := ch.QueueDelete(queue, false, false, false); return err })
		topics[s.Topic] = true
	}
	for topic := range topics {
		exchange := prefix + topic
		do("RabbitMQ exchange "+exchange, func(ch *amqp091.Channel) error { return ch.ExchangeDelete(exchange, false, false) })
	}
	return errors.Join(errs...)
}

// deleteNATSStreams deletes every JetStream stream whose name begins with
// prefix and returns how many it deleted.
func deleteNATSStreams(url, prefix string) (int, error) {
	nc, err := nats.Connect(url, nats.Name("orderpaid-lab scenario clean-up"), nats.Timeout(10*time.Second), nats.MaxReconnects(0))
	if err != nil {
		return 0, fmt.Errorf("delete the scenario's NATS streams (prefix %s): connect to %s: %w", prefix, config.RedactURL(url), err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return 0, fmt.Errorf("delete the scenario's NATS streams: %w", err)
	}
	var errs []error
	deleted := 0
	for name := range js.StreamNames() {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if err := js.DeleteStream(name); err != nil && !errors.Is(err, nats.ErrStreamNotFound) {
			errs = append(errs, fmt.Errorf("delete NATS stream %s: %w", name, err))
			continue
		}
		deleted++
	}
	return deleted, errors.Join(errs...)
}
