package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// forEachBroker runs test as a parallel subtest on every broker.
func forEachBroker(t *testing.T, test func(t *testing.T, kind string)) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			test(t, kind)
		})
	}
}

// A message published after Provision but before anyone subscribed waits for
// the group, and arrives with its UUID, payload and metadata intact.
func TestProvisionKeepsMessagesPublishedBeforeSubscribe(t *testing.T) {
	forEachBroker(t, func(t *testing.T, kind string) {
		bb := setup(t, kind, "worker")
		bb.provision(t, "worker")
		sent := bb.publish(t, 1)[0]

		_, ch := bb.subscribe(t, t.Context(), "worker")
		got := receive(t, ch)
		got.Ack()
		if got.UUID != sent.UUID {
			t.Errorf("UUID = %q, want %q", got.UUID, sent.UUID)
		}
		if string(got.Payload) != string(sent.Payload) {
			t.Errorf("payload = %s, want %s", got.Payload, sent.Payload)
		}
		for _, key := range []string{"order_id", "traceparent"} {
			if got.Metadata.Get(key) != sent.Metadata.Get(key) {
				t.Errorf("metadata %s = %q, want %q (all metadata: %v)", key, got.Metadata.Get(key), sent.Metadata.Get(key), got.Metadata)
			}
		}
	})
}

// Every consumer group gets its own copy of each message.
func TestEveryConsumerGroupGetsACopy(t *testing.T) {
	forEachBroker(t, func(t *testing.T, kind string) {
		bb := setup(t, kind, "worker", "audit")
		bb.provision(t, "worker", "audit")
		sent := bb.publish(t, 1)[0]

		for _, group := range []string{"worker", "audit"} {
			_, ch := bb.subscribe(t, t.Context(), group)
			got := receive(t, ch)
			got.Ack()
			if got.UUID != sent.UUID {
				t.Errorf("group %s got %q, want %q", group, got.UUID, sent.UUID)
			}
		}
	})
}

// The members of one group share its messages: together they receive every
// message, and no message goes to both.
func TestMembersOfAGroupShareMessages(t *testing.T) {
	forEachBroker(t, func(t *testing.T, kind string) {
		bb := setup(t, kind, "worker")
		bb.provision(t, "worker")
		_, ch1 := bb.subscribe(t, t.Context(), "worker")
		_, ch2 := bb.subscribe(t, t.Context(), "worker")
		sent := bb.publish(t, 10)

		deliveries := map[string]int{}
		perMember := [2]int{}
		collect := func(member int, msg *message.Message) {
			deliveries[msg.UUID]++
			perMember[member]++
			msg.Ack()
		}
		deadline := time.After(10 * time.Second)
		for len(deliveries) < len(sent) {
			select {
			case msg := <-ch1:
				collect(0, msg)
			case msg := <-ch2:
				collect(1, msg)
			case <-deadline:
				t.Fatalf("received %d of %d messages within 10s", len(deliveries), len(sent))
			}
		}
		quiet := time.After(500 * time.Millisecond) // time for a wrong extra copy to show up
		for waiting := true; waiting; {
			select {
			case msg := <-ch1:
				collect(0, msg)
			case msg := <-ch2:
				collect(1, msg)
			case <-quiet:
				waiting = false
			}
		}
		for _, m := range sent {
			if n := deliveries[m.UUID]; n != 1 {
				t.Errorf("message %s delivered %d times to the group, want once", m.UUID, n)
			}
		}
		t.Logf("members received %d and %d messages", perMember[0], perMember[1])
	})
}

// A nacked message (a handler error) is delivered again.
func TestNackedMessageIsRedelivered(t *testing.T) {
	forEachBroker(t, func(t *testing.T, kind string) {
		bb := setup(t, kind, "worker")
		bb.provision(t, "worker")
		_, ch := bb.subscribe(t, t.Context(), "worker")
		sent := bb.publish(t, 1)[0]

		first := receive(t, ch)
		first.Nack()
		again := receive(t, ch)
		again.Ack()
		if first.UUID != sent.UUID || again.UUID != sent.UUID {
			t.Errorf("got %q then %q, want %q twice", first.UUID, again.UUID, sent.UUID)
		}
	})
}

// Messages published while every member of a group is gone wait for the
// group. (On NATS this fails if nats.go, not Provision, created the durable
// consumer: it deletes the consumer when the subscription ends.)
func TestGroupResumesAfterItsMembersLeft(t *testing.T) {
	forEachBroker(t, func(t *testing.T, kind string) {
		bb := setup(t, kind, "worker")
		bb.provision(t, "worker")
		sub, ch := bb.subscribe(t, t.Context(), "worker")
		bb.publish(t, 1)
		receive(t, ch).Ack()
		if err := sub.Close(); err != nil {
			t.Fatalf("close the only member: %v", err)
		}

		later := bb.publish(t, 1)[0]
		_, ch = bb.subscribe(t, t.Context(), "worker")
		// NATS may still push the later message to the member that is going
		// away, while its connection drains; the server then delivers it
		// again only after AckWait (30s).
		wait := 10 * time.Second
		if kind == config.BrokerNATS {
			wait = 45 * time.Second
		}
		for { // the first message may come again: delivery is at least once
			msg := receiveWithin(t, ch, wait)
			msg.Ack()
			if msg.UUID == later.UUID {
				return
			}
		}
	})
}

// A message its subscriber neither acked nor nacked before closing (a worker
// shut down mid-handler) is not lost. RabbitMQ and postgres hand it to the
// next member at once; NATS redelivers it after AckWait, so there the test
// checks that the server still counts it as pending, not acked. (It was acked
// before nats.ManualAck was set: nats.go acked it when watermill's callback
// returned on shutdown.)
func TestUnackedMessageSurvivesSubscriberClose(t *testing.T) {
	forEachBroker(t, func(t *testing.T, kind string) {
		bb := setup(t, kind, "worker")
		bb.provision(t, "worker")
		sub, ch := bb.subscribe(t, t.Context(), "worker")
		sent := bb.publish(t, 1)[0]
		receive(t, ch) // the handler never finishes
		if err := sub.Close(); err != nil {
			t.Fatalf("close subscriber: %v", err)
		}

		if kind == config.BrokerNATS {
			if acked, pending := natsAckState(t, bb.topic, "worker"); acked != 0 || pending != 1 {
				t.Errorf("consumer has %d acked and %d pending, want 0 and 1", acked, pending)
			}
			return
		}
		_, ch = bb.subscribe(t, t.Context(), "worker")
		again := receive(t, ch)
		again.Ack()
		if again.UUID != sent.UUID {
			t.Errorf("got %q, want %q again", again.UUID, sent.UUID)
		}
	})
}

func TestPing(t *testing.T) {
	forEachBroker(t, func(t *testing.T, kind string) {
		bb := setup(t, kind)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := bb.b.Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})
}

// New fails at once on a broker that is not running, says how to start it and
// does not print the password.
func TestNewExplainsAnUnreachableBroker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg  config.Config
		hint string
	}{
		{config.Config{Broker: config.BrokerAMQP, AMQPURL: "amqp://guest:secret@127.0.0.1:1/"}, "rabbitmq-server -detached"},
		{config.Config{Broker: config.BrokerNATS, NATSURL: "nats://user:secret@127.0.0.1:1"}, "nats-server -js"},
	}
	for _, tt := range tests {
		t.Run(tt.cfg.Broker, func(t *testing.T) {
			t.Parallel()
			b, err := broker.New(t.Context(), tt.cfg, nil, watermill.NopLogger{})
			if err == nil {
				b.Close()
				t.Fatal("New succeeded on port 1")
			}
			if !strings.Contains(err.Error(), tt.hint) || !strings.Contains(err.Error(), "127.0.0.1:1") {
				t.Errorf("error %q does not name the address and %q", err, tt.hint)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}
