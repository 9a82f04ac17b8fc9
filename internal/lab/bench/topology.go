package bench

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/kafkalab"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// DeleteTopology removes what a run left on a shared broker under its
// prefix: RabbitMQ queues and exchanges, NATS streams (with their durable
// consumers), Kafka topics and consumer groups (kafkaBrokers, a
// KAFKA_BROKERS list). PostgreSQL needs nothing: the run's database is
// dropped.
func DeleteTopology(broker, amqpURL, natsURL, kafkaBrokers, prefix string) error {
	switch broker {
	case config.BrokerKafka:
		return kafkalab.DeleteUnder(kafkaBrokers, prefix)
	case config.BrokerAMQP:
		conn, err := amqp091.Dial(amqpURL)
		if err != nil {
			return fmt.Errorf("delete RabbitMQ queues of %s: %w", prefix, err)
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			return fmt.Errorf("delete RabbitMQ queues of %s: %w", prefix, err)
		}
		var errs []error
		for _, s := range consumer.Subscriptions() {
			_, err := ch.QueueDelete(prefix+s.Topic+"_"+s.Group, false, false, false)
			errs = append(errs, err)
			errs = append(errs, ch.ExchangeDelete(prefix+s.Topic, false, false))
		}
		return errors.Join(errs...)
	case config.BrokerNATS:
		nc, err := nats.Connect(natsURL)
		if err != nil {
			return fmt.Errorf("delete NATS streams of %s: %w", prefix, err)
		}
		defer nc.Close()
		js, err := nc.JetStream()
		if err != nil {
			return fmt.Errorf("delete NATS streams of %s: %w", prefix, err)
		}
		var errs []error
		for _, s := range consumer.Subscriptions() {
			if err := js.DeleteStream(prefix + s.Topic); err != nil && !errors.Is(err, nats.ErrStreamNotFound) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	return nil
}
