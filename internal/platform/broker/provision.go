package broker

import (
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Why provisioning exists
//
// The outbox relay may publish an event before the consumer that needs it has
// ever subscribed: the API starts first, or the worker is being deployed.
// Whether that event waits for the consumer depends on the broker:
//
//   - postgres: it always waits. The event is a row in watermill_<topic>, and
//     a consumer group with no offset row yet starts reading at offset 0.
//   - amqp: it is dropped. A fanout exchange copies a message into the queues
//     bound to it at publish time; with none bound, RabbitMQ still confirms
//     the publish (a confirm means "taken", not "routed") and the message is
//     gone, while the relay has already marked the outbox row as sent.
//   - nats: the stream is created with interest retention, so a message that
//     no durable consumer is interested in is not kept either.
//
// Provision closes that gap: it creates the group's queue or durable consumer
// ahead of time, and from then on every published message waits for the
// group, whether its members are running or not.

// initializeSubscriber is the Provision of brokers whose subscriber can create
// everything a consumer group needs by itself (message.SubscribeInitializer).
// For postgres that is the topic's message and offsets tables.
func (b *Broker) initializeSubscriber(topic, consumerGroup string) (err error) {
	sub, err := b.newSubscriber(consumerGroup)
	if err != nil {
		return fmt.Errorf("create subscriber: %w", err)
	}
	defer func() {
		if closeErr := sub.Close(); closeErr != nil {
			err = errors.Join(err, fmt.Errorf("close subscriber: %w", closeErr))
		}
	}()
	init, ok := sub.(message.SubscribeInitializer)
	if !ok {
		return nil // nothing to create: the subscriber creates it on Subscribe
	}
	if err := init.SubscribeInitialize(topic); err != nil {
		return fmt.Errorf("initialise subscriber: %w", err)
	}
	return nil
}
