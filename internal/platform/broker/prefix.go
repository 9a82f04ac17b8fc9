package broker

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
)

// withPrefix puts every topic this Broker touches under prefix (BROKER_PREFIX):
// exchanges and queues on RabbitMQ, streams and durables on NATS, tables on
// PostgreSQL. Several deployments, or parallel tests, can then share one broker
// without consuming each other's messages. The application keeps using the
// plain topic names; only the broker sees the prefixed ones.
func (b *Broker) withPrefix(prefix string) {
	b.prefix = prefix
	b.Publisher = prefixedPublisher{prefix: prefix, Publisher: b.Publisher}
	b.BatchPublisher = prefixedPublisher{prefix: prefix, Publisher: b.BatchPublisher}
	newSubscriber := b.newSubscriber
	b.newSubscriber = func(group string) (message.Subscriber, error) {
		sub, err := newSubscriber(group)
		if err != nil {
			return nil, err
		}
		return prefixedSubscriber{prefix: prefix, Subscriber: sub}, nil
	}
	if provision := b.provision; provision != nil {
		b.provision = func(topic, group string) error { return provision(prefix+topic, group) }
	}
	// A nil provision goes through b.newSubscriber, which now prefixes.
}

type prefixedPublisher struct {
	prefix string
	message.Publisher
}

func (p prefixedPublisher) Publish(topic string, msgs ...*message.Message) error {
	return p.Publisher.Publish(p.prefix+topic, msgs...)
}

type prefixedSubscriber struct {
	prefix string
	message.Subscriber
}

func (s prefixedSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return s.Subscriber.Subscribe(ctx, s.prefix+topic)
}

// SubscribeInitialize lets Provision create the prefixed topic's tables or queues.
func (s prefixedSubscriber) SubscribeInitialize(topic string) error {
	if init, ok := s.Subscriber.(message.SubscribeInitializer); ok {
		return init.SubscribeInitialize(s.prefix + topic)
	}
	return nil
}
