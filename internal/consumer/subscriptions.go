package consumer

import (
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/messages"
)

// Subscription is one consumer group reading one topic with one handler.
type Subscription struct {
	// Topic is the topic read, without the broker's prefix.
	Topic string
	// Group is the consumer group, which is also the handler's name in the
	// execution log and the consumer inbox.
	Group string
	// Handle handles one message of Topic with c's dependencies.
	Handle func(c *Consumers, msg *message.Message) error
}

// Subscriptions returns what the worker consumes: every topic, the consumer
// group that reads it and the handler that group runs. The router, the
// worker's provisioning, the retention of the postgres broker's tables, the
// lab and the tests all read this one table.
func Subscriptions() []Subscription {
	return []Subscription{
		{Topic: messages.TopicOrderPaid, Group: HandlerOrderPaid, Handle: (*Consumers).HandleOrderPaid},
		{Topic: messages.TopicOrderConfirmed, Group: HandlerOrderConfirmed, Handle: (*Consumers).HandleOrderConfirmed},
		{Topic: messages.TopicOrderRefunded, Group: HandlerOrderRefunded, Handle: (*Consumers).HandleOrderRefunded},
		{Topic: messages.TopicRefundRequested, Group: HandlerRefundRequested, Handle: (*Consumers).HandleRefundRequested},
		{Topic: messages.TopicRefundConfirmed, Group: HandlerRefundConfirmed, Handle: (*Consumers).HandleRefundConfirmed},
	}
}

// ConsumerGroups returns Subscriptions as a map from topic to consumer
// group, the form the broker's backlog checks take.
func ConsumerGroups() map[string]string {
	groups := make(map[string]string)
	for _, s := range Subscriptions() {
		groups[s.Topic] = s.Group
	}
	return groups
}
