package broker_test

import (
	"cmp"
	"context"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Commands that start the local brokers, named when a test skips.
const (
	startRabbitMQ = "rabbitmq-server -detached"
	startNATS     = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- " +
		"-a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log"
)

// kinds are the brokers every behaviour is checked on.
var kinds = []string{config.BrokerPostgres, config.BrokerAMQP, config.BrokerNATS}

func amqpURL() string {
	return cmp.Or(os.Getenv("TEST_AMQP_URL"), "amqp://guest:guest@127.0.0.1:5672/")
}
func natsURL() string { return cmp.Or(os.Getenv("TEST_NATS_URL"), "nats://127.0.0.1:4222") }

// bundle is one broker connection and a topic no other test uses.
type bundle struct {
	b     *broker.Broker
	topic string
}

// setup connects to the broker of that kind on a fresh topic. The exchange,
// queues or stream of the topic (for groups) are deleted when the test ends;
// postgres needs nothing, the test database is dropped.
func setup(t *testing.T, kind string, groups ...string) bundle {
	t.Helper()
	topic := "brokertest_" + tempdb.RandomHex(6)
	cfg := config.Config{Broker: kind, AMQPURL: amqpURL(), NATSURL: natsURL()}
	var pool *pgxpool.Pool
	switch kind {
	case config.BrokerPostgres:
		pool, _ = pgtest.NewDatabase(t)
	case config.BrokerAMQP:
		requireServer(t, "RabbitMQ", cfg.AMQPURL, startRabbitMQ)
		t.Cleanup(func() { deleteAMQPTopology(t, topic, groups) })
	case config.BrokerNATS:
		requireServer(t, "NATS", cfg.NATSURL, startNATS)
		t.Cleanup(func() { deleteNATSStream(t, topic) })
	}
	b, err := broker.New(t.Context(), cfg, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatalf("connect to %s: %v", kind, err)
	}
	t.Cleanup(func() { // runs before the topology is deleted
		if err := b.Close(); err != nil {
			t.Errorf("close %s broker: %v", kind, err)
		}
	})
	return bundle{b: b, topic: topic}
}

// requireServer skips the test when the broker is not listening, or fails it
// in CI, where every broker must be running.
func requireServer(t *testing.T, name, rawURL, start string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse %s URL: %v", name, err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err == nil {
		conn.Close()
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is required in CI but not reachable at %s (start it with: %s): %v", name, u.Host, start, err)
	}
	t.Skipf("%s not reachable at %s (start it with: %s): %v", name, u.Host, start, err)
}

func deleteAMQPTopology(t testing.TB, topic string, groups []string) {
	conn, err := amqp091.Dial(amqpURL())
	if err != nil {
		t.Logf("delete RabbitMQ exchange %s: %v", topic, err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Logf("delete RabbitMQ exchange %s: %v", topic, err)
		return
	}
	for _, g := range groups {
		if _, err := ch.QueueDelete(topic+"_"+g, false, false, false); err != nil {
			t.Logf("delete RabbitMQ queue %s_%s: %v", topic, g, err)
			return // the channel is closed after an error
		}
	}
	if err := ch.ExchangeDelete(topic, false, false); err != nil {
		t.Logf("delete RabbitMQ exchange %s: %v", topic, err)
	}
}

func deleteNATSStream(t *testing.T, topic string) {
	nc, err := nats.Connect(natsURL())
	if err != nil {
		t.Logf("delete NATS stream %s: %v", topic, err)
		return
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err == nil {
		err = js.DeleteStream(topic) // deletes its consumers too
	}
	if err != nil && err != nats.ErrStreamNotFound {
		t.Logf("delete NATS stream %s: %v", topic, err)
	}
}

// natsAckState reports the acked and ack-pending counts of a group's durable.
func natsAckState(t *testing.T, topic, group string) (acked uint64, pending int) {
	t.Helper()
	nc, err := nats.Connect(natsURL())
	if err != nil {
		t.Fatalf("connect to NATS: %v", err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatalf("open JetStream: %v", err)
	}
	info, err := js.ConsumerInfo(topic, topic+"_"+group)
	if err != nil {
		t.Fatalf("durable consumer of %s on %s: %v", group, topic, err)
	}
	return info.AckFloor.Consumer, info.NumAckPending
}

// provision calls Provision for every group, as the service does at start-up.
func (bb bundle) provision(t *testing.T, groups ...string) {
	t.Helper()
	for _, g := range groups {
		if err := bb.b.Provision(bb.topic, g); err != nil {
			t.Fatalf("provision: %v", err)
		}
	}
}

// subscribe starts one member of group; it stops when the test ends.
func (bb bundle) subscribe(t *testing.T, ctx context.Context, group string) (message.Subscriber, <-chan *message.Message) {
	t.Helper()
	sub, err := bb.b.Subscriber(group)
	if err != nil {
		t.Fatalf("new subscriber: %v", err)
	}
	ch, err := sub.Subscribe(ctx, bb.topic)
	if err != nil {
		t.Fatalf("subscribe to %s as %s: %v", bb.topic, group, err)
	}
	return sub, ch
}

// publish publishes n messages, each with the metadata the service sets.
func (bb bundle) publish(t *testing.T, n int) []*message.Message {
	t.Helper()
	msgs := make([]*message.Message, n)
	for i := range msgs {
		orderID := watermill.NewUUID()
		msgs[i] = message.NewMessage(watermill.NewUUID(), []byte(`{"order_id":"`+orderID+`"}`))
		msgs[i].Metadata.Set("order_id", orderID)
		msgs[i].Metadata.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	}
	if err := bb.b.Publisher.Publish(bb.topic, msgs...); err != nil {
		t.Fatalf("publish to %s: %v", bb.topic, err)
	}
	return msgs
}

// receive waits for the next message on ch.
func receive(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	return receiveWithin(t, ch, 10*time.Second)
}

// receiveWithin waits up to d for the next message on ch.
func receiveWithin(t *testing.T, ch <-chan *message.Message, d time.Duration) *message.Message {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed before a message arrived")
		}
		return msg
	case <-time.After(d):
		t.Fatalf("no message within %v", d)
	}
	return nil
}
