package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// A relay is all or nothing over its lanes: when one lane's forwarder
// cannot run (its subscription fails), Run stops the lanes that started and
// returns the error. A lane left reading for a relay that has failed would
// take the next message of its group, lock the group's turn and never hand
// the message on, so another member of the group would wait behind it.
//
// Here lane 1's subscriber is closed, so its forwarder fails at once; Run
// must return promptly, and then a message in lane 0 must reach another
// member of the same group. With Run's cancel on a failed lane removed, Run
// keeps lane 0 reading until its context ends, and the test fails.
func TestAFailedLaneStopsTheRelaysOtherLanes(t *testing.T) {
	t.Parallel()
	const topic, group, lanes = "lanes_fail", "relay", 2
	pool, _ := pgtest.NewDatabase(t)
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerPostgres}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	lane := func(k int) message.Subscriber {
		sub, err := broker.NewPostgresSubscriber(pool, broker.PostgresSubscriberConfig{
			ConsumerGroup: group, Lane: k, Lanes: lanes, LaneKey: broker.LaneKeyMessage, PollInterval: 20 * time.Millisecond,
		}, watermill.NopLogger{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Close() })
		if err := sub.(message.SubscribeInitializer).SubscribeInitialize(topic); err != nil {
			t.Fatal(err)
		}
		return sub
	}
	forward := func(sub message.Subscriber) *forwarder.Forwarder {
		fwd, err := forwarder.NewForwarder(sub, b.Publisher, watermill.NopLogger{}, forwarder.Config{ForwarderTopic: topic, CloseTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return fwd
	}
	broken := lane(1)
	if err := broken.Close(); err != nil {
		t.Fatal(err)
	}
	r := &Relay{lanes: []*forwarder.Forwarder{forward(lane(0)), forward(broken)}}
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	began := time.Now()
	if err := r.Run(ctx); err == nil {
		t.Fatal("the relay ran with a lane whose subscription failed, want an error")
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Fatalf("Run returned after %s: the failed lane did not stop the others, which read until the context ended", took.Round(time.Second))
	}

	var inLane0 string
	for inLane0 == "" {
		id := watermill.NewUUID()
		var k int
		q := `SELECT ` + broker.LaneOf(broker.LaneKeyMessage, lanes) + ` FROM (SELECT json_build_object('order_id', $1::text) AS metadata, ''::text AS uuid) m`
		if err := pool.QueryRow(t.Context(), q, id).Scan(&k); err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			inLane0 = id
		}
	}
	msg := message.NewMessage(watermill.NewUUID(), []byte(`{}`))
	msg.Metadata.Set("order_id", inLane0)
	if err := b.Publisher.Publish(topic, msg); err != nil {
		t.Fatal(err)
	}
	ch, err := lane(0).Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ch:
		if got.UUID != msg.UUID {
			t.Fatalf("got message %s, want %s", got.UUID, msg.UUID)
		}
		got.Ack()
	case <-time.After(20 * time.Second):
		t.Fatal("lane 0's message did not reach the other member within 20s: the failed relay's lane 0 still holds the group's turn")
	}
}
