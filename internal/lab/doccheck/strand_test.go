package doccheck_test

import (
	"cmp"
	"context"
	"os"
	"testing"
	"time"

	"github.com/rabbitmq/amqp091-go"

	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
)

// strandInRabbitMQ leaves 5 order_paid messages no consumer has read in the
// RabbitMQ queue of the order_paid consumer, as a worker on amqp stopped with
// paid orders in flight leaves them, under a BROKER_PREFIX of the session's
// own (the RabbitMQ is shared): the page's queue name is that queue's.
func strandInRabbitMQ(t *testing.T, s *session) {
	t.Helper()
	prefix := "orderpaid_doc_" + tempdb.RandomHex(4) + "_"
	queue := prefix + "order_paid_order_paid"
	conn, err := amqp091.Dial(cmp.Or(os.Getenv("AMQP_URL"), "amqp://guest:guest@localhost:5672/"))
	if err != nil {
		t.Skipf("RabbitMQ not reachable: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatalf("declare %s: %v", queue, err)
	}
	t.Cleanup(func() { deleteQueue(queue) })
	for range 5 {
		msg := amqp091.Publishing{ContentType: "application/json", DeliveryMode: amqp091.Persistent, Body: []byte(`{}`)}
		if err := ch.PublishWithContext(context.Background(), "", queue, false, false, msg); err != nil {
			t.Fatalf("publish to %s: %v", queue, err)
		}
	}
	if _, rc, err := s.run("export BROKER_PREFIX="+prefix, 5*time.Second); err != nil || rc != 0 {
		t.Fatalf("export BROKER_PREFIX: %v", err)
	}
	s.learn("queue order_paid_order_paid", "queue "+queue)
}

func deleteQueue(queue string) {
	conn, err := amqp091.Dial(cmp.Or(os.Getenv("AMQP_URL"), "amqp://guest:guest@localhost:5672/"))
	if err != nil {
		return
	}
	defer conn.Close()
	if ch, err := conn.Channel(); err == nil {
		_, _ = ch.QueueDelete(queue, false, false, false)
	}
}
