package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// What the other brokers hold
//
// A worker refuses to start over messages left in a broker it does not read
// (switch.go). For the postgres broker it counts rows (PostgresBacklog); for
// RabbitMQ and NATS it asks the server what waits in each consumer group's
// queue or durable consumer, under BROKER_PREFIX. A broker that cannot be
// reached within checkTimeout is not checked (errUnreachable): most
// deployments never ran one of the others, and a check must not make a
// worker depend on a broker it does not use.

// checkTimeout bounds the connection to a broker the worker does not use.
const checkTimeout = 2 * time.Second

// errUnreachable marks a broker that could not be reached to be checked.
var errUnreachable = errors.New("not reachable")

// AMQPBacklog counts, for each topic of groups (topic -> consumer group,
// without BROKER_PREFIX), the messages ready in the group's queue
// (<prefix><topic>_<group>) on the RabbitMQ at url: those no member has
// taken. A queue that does not exist counts 0. An error wrapping
// errUnreachable means RabbitMQ could not be reached.
func AMQPBacklog(ctx context.Context, url, prefix string, groups map[string]string) (map[string]int64, error) {
	if url == "" {
		return nil, fmt.Errorf("%w: no AMQP_URL", errUnreachable)
	}
	conn, err := amqp091.DialConfig(url, amqp091.Config{Dial: func(network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{Timeout: checkTimeout}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// For the handshake, as amqp091.DefaultDial; cleared once it is done.
		return c, c.SetDeadline(time.Now().Add(checkTimeout))
	}})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	defer conn.Close()
	backlog := make(map[string]int64, len(groups))
	for topic, group := range groups {
		queue := AMQPQueue(prefix+topic, group)
		// A passive declare of a missing queue closes its channel: one each.
		ch, err := conn.Channel()
		if err != nil {
			return nil, fmt.Errorf("open a RabbitMQ channel: %w", err)
		}
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		var amqpErr *amqp091.Error
		switch {
		case errors.As(err, &amqpErr) && amqpErr.Code == amqp091.NotFound:
			continue
		case err != nil:
			return nil, fmt.Errorf("read RabbitMQ queue %s: %w", queue, err)
		}
		backlog[topic] = int64(q.Messages)
		_ = ch.Close()
	}
	return backlog, nil
}

// AMQPQueue is the name of group's queue of a (prefixed) topic on RabbitMQ.
func AMQPQueue(topic, group string) string {
	return amqpConfig("", group).Queue.GenerateName(topic)
}

// NATSBacklog counts, for each topic of groups (topic -> consumer group,
// without BROKER_PREFIX), the messages the group's durable consumer
// (<prefix><topic>_<group> on stream <prefix><topic>) has not had
// acknowledged on the NATS at url: those not delivered yet and those
// delivered and not acked. A stream or consumer that does not exist counts
// 0. An error wrapping errUnreachable means NATS JetStream could not be
// reached.
func NATSBacklog(ctx context.Context, url, prefix string, groups map[string]string) (map[string]int64, error) {
	if url == "" { // (nats.Connect would dial its own default)
		return nil, fmt.Errorf("%w: no NATS_URL", errUnreachable)
	}
	nc, err := nats.Connect(url, nats.Name("orderpaid broker check"), nats.Timeout(checkTimeout), nats.NoReconnect())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	js, err := nc.JetStream(nats.Context(ctx))
	if err == nil {
		_, err = js.AccountInfo()
	}
	if err != nil { // no JetStream: nothing of a worker on nats can be there
		return nil, fmt.Errorf("%w: JetStream: %w", errUnreachable, err)
	}
	backlog := make(map[string]int64, len(groups))
	for topic, group := range groups {
		stream := prefix + topic
		info, err := js.ConsumerInfo(stream, NATSDurable(stream, group))
		switch {
		case errors.Is(err, nats.ErrStreamNotFound), errors.Is(err, nats.ErrConsumerNotFound):
			continue
		case err != nil:
			return nil, fmt.Errorf("read NATS consumer %s of stream %s: %w", NATSDurable(stream, group), stream, err)
		}
		backlog[topic] = int64(info.NumPending) + int64(info.NumAckPending)
	}
	return backlog, nil
}

// NATSDurable is the name of group's durable consumer on the stream of a
// (prefixed) topic.
func NATSDurable(topic, group string) string { return natsDurableName(group, topic) }
