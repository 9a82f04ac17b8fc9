package broker_test

import (
	"net"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// One call of 200 messages through the amqp Broker's BatchPublisher, with
// BROKER_PREFIX, reaches the group's queue complete and in order, and the
// per-message subscriber reads each as it was sent: UUID, payload, metadata.
func TestAMQPBatchPublishDeliversACallCompleteAndInOrder(t *testing.T) {
	t.Parallel()
	const topic, group = "order_paid", "worker"
	requireServer(t, "RabbitMQ", amqpURL(), startRabbitMQ)
	prefix := "brokertest_" + tempdb.RandomHex(6) + "_"
	t.Cleanup(func() { deleteAMQPTopology(t, prefix+topic, []string{group}) })
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerAMQP, AMQPURL: amqpURL(), BrokerPrefix: prefix}, nil, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close amqp broker: %v", err)
		}
	})
	bb := bundle{b: b, topic: topic}
	bb.provision(t, group)
	sent := orderMessages(200)
	if err := b.BatchPublisher.Publish(topic, sent...); err != nil {
		t.Fatalf("publish 200 in one call: %v", err)
	}
	if ready, _ := amqpQueueState(t, prefix+topic+"_"+group); ready != len(sent) {
		t.Errorf("queue %s%s_%s holds %d message(s) once the call returned, want %d", prefix, topic, group, ready, len(sent))
	}

	_, ch := bb.subscribe(t, t.Context(), group)
	for i, want := range sent {
		got := receive(t, ch)
		got.Ack()
		if !got.Equals(want) {
			t.Fatalf("message %d: got %s %s %v, want %s %s %v", i, got.UUID, got.Payload, got.Metadata, want.UUID, want.Payload, want.Metadata)
		}
	}
}

// A channel the broker closes during a call (here: its exchange deleted
// under it, so RabbitMQ closes the channel on the first publish) fails the
// call, and the next call opens a new channel, declares the exchange on it
// again and succeeds: a dead channel is never reused.
func TestAMQPBatchPublishReplacesAChannelTheBrokerClosed(t *testing.T) {
	t.Parallel()
	const group = "g"
	bb := setup(t, config.BrokerAMQP, group)
	bb.provision(t, group)
	pub := bb.b.BatchPublisher
	if err := pub.Publish(bb.topic, orderMessages(5)...); err != nil {
		t.Fatalf("first call: %v", err)
	}

	deleteAMQPExchange(t, bb.topic) // the queue stays, unbound
	err := pub.Publish(bb.topic, orderMessages(5)...)
	if err == nil {
		t.Fatal("a call on a channel the broker closed returned nil")
	}
	if !strings.Contains(err.Error(), "0 confirmed") {
		t.Errorf("error %q does not say that none was confirmed", err)
	}
	t.Logf("call on the closed channel: %v", err)

	// A new channel declares the exchange again (nothing is bound to it,
	// so these five are dropped, and confirmed).
	if err := pub.Publish(bb.topic, orderMessages(5)...); err != nil {
		t.Fatalf("the call after the channel closed: %v", err)
	}
	bb.provision(t, group) // binds the queue again
	if err := pub.Publish(bb.topic, orderMessages(5)...); err != nil {
		t.Fatalf("call after provisioning again: %v", err)
	}
	if ready, _ := amqpQueueState(t, bb.topic+"_"+group); ready != 10 {
		t.Errorf("queue holds %d message(s), want 10: the first call's and the last's", ready)
	}
}

// A connection lost between calls (reset by the network) fails at most one
// call; the next dials a new connection and succeeds.
func TestAMQPBatchPublishRedialsALostConnection(t *testing.T) {
	t.Parallel()
	const group = "g"
	requireServer(t, "RabbitMQ", amqpURL(), startRabbitMQ)
	proxy := startTCPProxy(t)
	b := connectAMQP(t, proxy.url())
	topic := "brokertest_" + tempdb.RandomHex(6)
	t.Cleanup(func() { deleteAMQPTopology(t, topic, []string{group}) })
	bb := bundle{b: b, topic: topic}
	bb.provision(t, group)
	if err := b.BatchPublisher.Publish(topic, orderMessages(5)...); err != nil {
		t.Fatalf("first call: %v", err)
	}

	proxy.cutLast() // the batch publisher's connection, dialled last by newAMQP
	if err := b.BatchPublisher.Publish(topic, orderMessages(5)...); err != nil {
		t.Logf("call right after the cut: %v", err) // the reset may not have been read yet
		if err := b.BatchPublisher.Publish(topic, orderMessages(5)...); err != nil {
			t.Fatalf("second call after the cut: %v", err)
		}
	}
	if ready, _ := amqpQueueState(t, topic+"_"+group); ready != 10 {
		t.Errorf("queue holds %d message(s), want 10", ready)
	}
}

// BenchmarkAMQPBatchPublish compares calls of 100 persistent messages to a
// topic with one durable queue bound, through watermill-amqp's publisher
// (a confirm awaited per message) and the batch publisher (confirms
// pipelined), on one RabbitMQ in one run:
//
//	go test -bench AMQPBatchPublish -run '^$' ./internal/platform/broker
func BenchmarkAMQPBatchPublish(b *testing.B) {
	const group, perCall = "bench", 100
	if u, err := url.Parse(amqpURL()); err != nil {
		b.Fatal(err)
	} else if conn, err := net.Dial("tcp", u.Host); err != nil {
		if os.Getenv("CI") != "" {
			b.Fatalf("RabbitMQ is required in CI: %v", err)
		}
		b.Skipf("RabbitMQ not reachable (start it with: %s): %v", startRabbitMQ, err)
	} else {
		conn.Close()
	}
	brk, err := broker.New(b.Context(), config.Config{Broker: config.BrokerAMQP, AMQPURL: amqpURL()}, nil, watermill.NopLogger{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = brk.Close() })
	for _, p := range []struct {
		name string
		pub  message.Publisher
	}{
		{"watermill", brk.Publisher},
		{"pipelined", brk.BatchPublisher},
	} {
		b.Run(p.name, func(b *testing.B) {
			topic := "brokertest_" + tempdb.RandomHex(6)
			if err := brk.Provision(topic, group); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { deleteAMQPTopology(b, topic, []string{group}) })
			for b.Loop() {
				if err := p.pub.Publish(topic, orderMessages(perCall)...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*perCall)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// orderMessages returns n messages with the metadata the service sets.
func orderMessages(n int) []*message.Message {
	msgs := make([]*message.Message, n)
	for i := range msgs {
		orderID := watermill.NewUUID()
		msgs[i] = message.NewMessage(watermill.NewUUID(), []byte(`{"order_id":"`+orderID+`"}`))
		msgs[i].Metadata.Set("order_id", orderID)
		msgs[i].Metadata.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	}
	return msgs
}

// deleteAMQPExchange deletes a topic's exchange, which unbinds its queues.
func deleteAMQPExchange(t *testing.T, topic string) {
	t.Helper()
	if err := amqpChannel(t).ExchangeDelete(topic, false, false); err != nil {
		t.Fatalf("delete exchange %s: %v", topic, err)
	}
}
