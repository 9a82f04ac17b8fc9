package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Switching from RabbitMQ or NATS used to strand what they held: a worker on
// nats started over five order_paid messages waiting in RabbitMQ, never read
// them, and the five orders stayed pending for good. Now a worker refuses to
// start while a broker it does not read holds messages for its consumer
// groups, says how many, where, and how to drain them, and neither takes
// them nor writes anything (no tables, no queues, no streams of its own).
func TestWorkerRefusesMessagesLeftOnAnotherBroker(t *testing.T) {
	t.Parallel()
	for _, sw := range []struct{ from, to string }{
		{"amqp", "nats"}, {"nats", "amqp"}, {"amqp", "postgres"}, {"nats", "postgres"},
	} {
		t.Run(sw.from+" to "+sw.to, func(t *testing.T) {
			t.Parallel()
			env := brokerEnv(t, sw.from)
			brokerEnv(t, sw.to) // skipped (or failed in CI) unless it runs too
			prefix := env["BROKER_PREFIX"]
			t.Cleanup(func() {
				for _, b := range []string{sw.from, sw.to} {
					removeBrokerObjects(t, b, env, brokerObjects(t, b, env, prefix))
				}
			})
			pool, dbURL := pgtest.NewDatabase(t)

			// Five order_paid messages on the old broker that no worker read.
			const n = 5
			cfg := config.Config{Broker: sw.from, BrokerPrefix: prefix, AMQPURL: env["AMQP_URL"], NATSURL: env["NATS_URL"]}
			old, err := broker.New(t.Context(), cfg, pool, watermill.NopLogger{})
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			for _, s := range consumer.Subscriptions() {
				if err := old.Provision(s.Topic, s.Group); err != nil {
					t.Fatal(err)
				}
			}
			for range n {
				msg, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: uuid.New(), Source: "test"})
				if err != nil {
					t.Fatal(err)
				}
				if err := old.Publisher.Publish(messages.TopicOrderPaid, msg); err != nil {
					t.Fatal(err)
				}
			}
			unread := func() int64 {
				t.Helper()
				groups := map[string]string{messages.TopicOrderPaid: consumer.HandlerOrderPaid}
				count := broker.AMQPBacklog
				if sw.from == "nats" {
					count = broker.NATSBacklog
				}
				backlog, err := count(t.Context(), env[map[string]string{"amqp": "AMQP_URL", "nats": "NATS_URL"}[sw.from]], prefix, groups)
				if err != nil {
					t.Fatal(err)
				}
				return backlog[messages.TopicOrderPaid]
			}
			eventually(t, 10*time.Second, "the messages counted on "+sw.from, func() (bool, string) {
				got := unread()
				return got == n, fmt.Sprintf("%d unread", got)
			})
			tables := tablesOf(t, pool)
			onNew := brokerObjects(t, sw.to, env, prefix)

			// Without the check this worker starts, and runs until the timeout.
			getenv := devGetenv(merge(env, map[string]string{"DATABASE_URL": dbURL, "BROKER": sw.to}))
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			var out strings.Builder
			err = run(ctx, []string{"orderpaid", "worker"}, getenv, &out, &out)
			t.Logf("worker on %s: %v", sw.to, err)
			topic := prefix + messages.TopicOrderPaid
			where := map[string]string{
				"amqp": "in queue " + broker.AMQPQueue(topic, consumer.HandlerOrderPaid),
				"nats": "in consumer " + broker.NATSDurable(topic, consumer.HandlerOrderPaid) + " of stream " + topic,
			}[sw.from]
			for _, part := range []string{
				fmt.Sprintf("BROKER=%s, but ", sw.to), fmt.Sprintf("hold %d message(s)", n), fmt.Sprintf("%d %s", n, where),
				fmt.Sprintf("run `BROKER=%s orderpaid worker`", sw.from), "then start on " + sw.to,
			} {
				if !strings.Contains(errString(err), part) {
					t.Errorf("worker on %s over %d messages left on %s: err = %v, want one saying %q", sw.to, n, sw.from, err, part)
				}
			}
			if got := unread(); got != n {
				t.Errorf("after the refusal %d messages wait on %s, want the %d left there", got, sw.from, n)
			}
			if after := tablesOf(t, pool); strings.Join(after, " ") != strings.Join(tables, " ") {
				t.Errorf("the refused worker changed the database's tables: %v before, %v after", tables, after)
			}
			if after := brokerObjects(t, sw.to, env, prefix); strings.Join(after, " ") != strings.Join(onNew, " ") {
				t.Errorf("the refused worker provisioned %s: %v before, %v after", sw.to, onNew, after)
			}
		})
	}
}
