package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// newAMQP connects to RabbitMQ with watermill-amqp's durable pub/sub layout.
// For a watermill topic such as order_paid and a consumer group such as
// worker, RabbitMQ holds:
//
//   - exchange "order_paid": a durable fanout exchange, one per topic, declared
//     by the publisher on its first publish to the topic and by Provision. The
//     relay publishes to it with routing key "" and persistent delivery mode.
//   - queue "order_paid_worker" (<topic>_<group>): a durable queue, one per
//     (topic, consumer group), bound to the exchange. The fanout copies every
//     message into each bound queue, so each group gets its own copy; the
//     members of a group consume the same queue and RabbitMQ hands each message
//     to one of them (prefetch 1: one unacknowledged message per member).
//
// The queue is declared and bound by Provision, and again by every Subscribe
// (declaring is idempotent). It must exist before the first publish: a fanout
// exchange with no queue bound drops the message and still confirms it.
// (Publish.Mandatory would make RabbitMQ return such a message, but
// watermill-amqp does not listen for returns, so it is left off.)
//
// Publishing waits for RabbitMQ's publisher confirm (ConfirmDelivery), so the
// relay marks an outbox row as sent only once the broker has the message.
// Each publish opens and closes a channel (Publish.ChannelPoolSize 0): a pool
// is 1.6 x faster here, but watermill-amqp v3.0.2's pool loses a channel each
// time reopening one fails while the connection is down, and hangs every
// publish once all are lost (docs/performance.md, "a channel pool").
// Consuming: an ack removes the message; a nack (handler error) requeues it at
// once, and it comes back with metadata _watermill_amqp_redelivered=true; a
// consumer that dies before acking gets its message requeued by RabbitMQ. The
// message UUID travels in the _watermill_message_uuid header, the metadata in
// the other headers.
//
// The publisher owns one connection; the subscribers and Provision share a
// second one, as RabbitMQ advises: a publisher slowed down by flow control
// must not stall the consumers. Both reconnect on their own with backoff;
// Ping reports not ready while either is down. BatchPublisher
// (amqpBatchPublisher: many messages per call, confirms pipelined) owns a
// third, which it redials on the next call after losing it. Each batch source
// (CONSUMER_BATCH_SIZE > 1, amqpBatchSource) dials a connection of its own
// and reads the group's same queue with prefetch N. ctx is unused: watermill-amqp
// dials without a context (amqp091's dial times out after 30 s).
func newAMQP(ctx context.Context, url string, logger watermill.LoggerAdapter) (*Broker, error) {
	pubConfig := amqp.NewDurablePubSubConfig(url, nil) // a publisher names no queue
	pubConfig.Publish.ConfirmDelivery = true
	pub, err := amqp.NewPublisher(pubConfig, logger)
	if err != nil {
		return nil, amqpUnreachable(url, err)
	}
	subConn, err := amqp.NewConnection(amqp.ConnectionConfig{AmqpURI: url}, logger)
	if err != nil {
		return nil, errors.Join(amqpUnreachable(url, err), pub.Close())
	}
	// The batch publisher dials its own connection (amqpBatchPublisher),
	// last: tests cut it alone through a proxy.
	batchPub, err := newAMQPBatchPublisher(url)
	if err != nil {
		return nil, errors.Join(amqpUnreachable(url, err), subConn.Close(), pub.Close())
	}
	newSubscriber := func(group string) (*amqp.Subscriber, error) {
		return amqp.NewSubscriberWithConnection(amqpConfig(url, group), logger, subConn)
	}
	return &Broker{
		Name:           "amqp",
		Publisher:      pub,
		BatchPublisher: batchPub,
		newSubscriber: func(group string) (message.Subscriber, error) {
			return newSubscriber(group)
		},
		batchSource: func(topic, group string, size int) (BatchSource, error) {
			return newAMQPBatchSource(url, topic, group, size), nil
		},
		provision: func(topic, group string) (err error) {
			sub, err := newSubscriber(group)
			if err != nil {
				return fmt.Errorf("create subscriber: %w", err)
			}
			defer func() { err = errors.Join(err, sub.Close()) }() // leaves subConn open
			return sub.SubscribeInitialize(topic)                  // declares exchange and queue, binds them
		},
		ping: func(context.Context) error {
			if !pub.IsConnected() || !subConn.IsConnected() {
				return errors.New("not connected to RabbitMQ, reconnecting")
			}
			return nil
		},
		closers: []func() error{subConn.Close}, // closed last, after the subscribers
	}, nil
}

// amqpConfig is watermill-amqp's durable pub/sub configuration: exchange
// <topic>, queue <topic>_<group>. A nack requeues the message (explicitly
// NoRequeueOnNack false): with this broker, a message is dropped only when it
// is acked, and a poison message is moved aside by the router's PoisonQueue.
func amqpConfig(url, group string) amqp.Config {
	cfg := amqp.NewDurablePubSubConfig(url, amqp.GenerateQueueNameTopicNameWithSuffix(group))
	cfg.Consume.NoRequeueOnNack = false
	return cfg
}

// amqpUnreachable says what to do when RabbitMQ cannot be reached at start-up.
func amqpUnreachable(url string, err error) error {
	return fmt.Errorf("connect to RabbitMQ: is RabbitMQ running at %s? start it with: rabbitmq-server -detached: %w",
		config.RedactURL(url), err)
}
