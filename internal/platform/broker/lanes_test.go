package broker_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

const lanes = 2

// laneOf asks PostgreSQL which lane a message of orderID is read by.
func laneOf(t *testing.T, pool *pgxpool.Pool, orderID string) int {
	t.Helper()
	var lane int
	q := `SELECT ` + broker.LaneOf(broker.LaneKeyMessage, lanes) + ` FROM (SELECT json_build_object('order_id', $1::text) AS metadata, ''::text AS uuid) m`
	if err := pool.QueryRow(t.Context(), q, orderID).Scan(&lane); err != nil {
		t.Fatalf("lane of %s: %v", orderID, err)
	}
	return lane
}

// ordersInTwoLanes returns two order ids that hash to different lanes.
func ordersInTwoLanes(t *testing.T, pool *pgxpool.Pool) (string, string) {
	t.Helper()
	first := watermill.NewUUID()
	for range 100 {
		other := watermill.NewUUID()
		if laneOf(t, pool, other) != laneOf(t, pool, first) {
			return first, other
		}
	}
	t.Fatal("100 order ids all in one lane: the lane expression does not spread")
	return "", ""
}

func orderMessage(orderID string) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(`{"order_id":"`+orderID+`"}`))
	msg.Metadata.Set("order_id", orderID)
	return msg
}

// A group read in lanes (the outbox relay's) hands out messages by order id:
// while one order's message is in a handler, another order's message in
// another lane is handed out (the lanes run in parallel), but the same
// order's next message is not (one order is handled one message at a time,
// in order).
//
// With one lane the other order waits behind the held message; with lanes
// keyed on the message id instead of the order id, the same order's second
// message overtakes the first (in 3 runs of 4: it may hash to the same lane).
func TestLanesRunOrdersInParallelAndOneOrderInOrder(t *testing.T) {
	const topic = "lanes"
	pool, b := lanesSetup(t)
	slow, other := ordersInTwoLanes(t, pool)
	slowFirst, slowSecond, otherMsg := orderMessage(slow), orderMessage(slow), orderMessage(other)
	for _, m := range []*message.Message{slowFirst, slowSecond, otherMsg} {
		// One publish each: three transactions, in this order.
		if err := b.Publisher.Publish(topic, m); err != nil {
			t.Fatal(err)
		}
	}
	waitVisible(t, pool, topic)
	ch := subscribeLanes(t, pool, topic)

	// Hold whatever of the slow order arrives first, unacked, and see what
	// else is handed out meanwhile.
	var held *message.Message
	gotOther := false
	deadline := time.After(5 * time.Second)
	for !gotOther || held == nil {
		select {
		case msg := <-ch:
			switch msg.UUID {
			case otherMsg.UUID:
				gotOther = true
				msg.Ack()
			case slowFirst.UUID:
				held = msg
			case slowSecond.UUID:
				t.Fatalf("the order's second message was handed out before its first (held: %v)", held != nil)
			}
		case <-deadline:
			t.Fatalf("within 5s: other order's message received %v, slow order's first message received %v; "+
				"a message in a handler must not stop other orders", gotOther, held != nil)
		}
	}
	select {
	case msg := <-ch:
		t.Fatalf("message %s handed out while the same order's first message is unacked", msg.UUID)
	case <-time.After(time.Second):
	}
	held.Ack()
	if got := receive(t, ch); got.UUID != slowSecond.UUID {
		t.Fatalf("after the first message's ack got %s, want the order's second message %s", got.UUID, slowSecond.UUID)
	} else {
		got.Ack()
	}
}

// waitVisible waits until a poll can see every row of topic. A row is
// handed out only once every transaction older than it has ended on the
// whole server (PostgresSchema.SelectQuery), and the suite's other packages
// share the server: one of their open transactions can hold a row back for
// seconds. The tests' deadlines start once the rows are visible, so they
// measure the lanes, not the neighbours.
func waitVisible(t *testing.T, pool *pgxpool.Pool, topic string) {
	t.Helper()
	table := broker.PostgresSchema{}.MessagesTable(topic)
	deadline := time.Now().Add(time.Minute)
	for {
		var hidden int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM `+table+`
			WHERE transaction_id >= pg_snapshot_xmin(pg_current_snapshot())`).Scan(&hidden); err != nil {
			t.Fatal(err)
		}
		if hidden == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows of %s not visible after a minute: a transaction left open on the server holds them back", hidden, table)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lanesSetup is a fresh database and a postgres broker to publish with.
func lanesSetup(t *testing.T) (*pgxpool.Pool, *broker.Broker) {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerPostgres}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return pool, b
}

// subscribeLanes subscribes a member of consumer group "relay" to topic in
// lanes by the message's order id, a subscriber a lane as the relay's
// forwarders have, and hands out what every lane hands out on one channel.
func subscribeLanes(t *testing.T, pool *pgxpool.Pool, topic string) <-chan *message.Message {
	t.Helper()
	out := make(chan *message.Message)
	for lane := range lanes {
		sub, err := broker.NewPostgresSubscriber(pool, broker.PostgresSubscriberConfig{
			ConsumerGroup: "relay", Lane: lane, Lanes: lanes, LaneKey: broker.LaneKeyMessage,
		}, watermill.NopLogger{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Close() })
		in, err := sub.Subscribe(t.Context(), topic)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for msg := range in {
				select {
				case out <- msg:
				case <-t.Context().Done():
					msg.Nack()
				}
			}
		}()
	}
	return out
}
