// Package broker connects the service to the message broker chosen with
// BROKER: postgres (watermill-sql, no other service needed), amqp (RabbitMQ),
// nats (NATS JetStream) or kafka (franz-go; see newKafka).
//
// Every broker delivers at least once. Nothing in this package tries to make
// delivery exactly-once; the consumers protect their effects instead.
package broker
