package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A publish the broker refuses is not a publish: the relay must leave the
// outbox row unacknowledged and publish it again once the broker is back. A
// relay that swallowed the error (logged it and acked the row) would lose the
// confirmation for good, and nothing would ever notice: the outbox says
// relayed, the broker never had it.
//
// The broker is the real postgres broker, whose topic table refuses every
// insert (a trigger raising an error) for the length of the outage.
//
// Not parallel: the relay reads only outbox rows older than the oldest
// transaction running anywhere on the server (watermill's xmin rule), and
// relay tests hold a transaction open on purpose (a stalled publish here, an
// outage there), so two of them running at once can each wait for the other.
func TestRelayPublishesAgainAfterABrokerOutage(t *testing.T) {
	pool, _ := pgtest.NewDatabase(t)
	brk, err := broker.New(t.Context(), config.Config{Broker: config.BrokerPostgres}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = brk.Close() })
	if err := brk.Provision(messages.TopicOrderConfirmed, messages.TopicOrderConfirmed); err != nil {
		t.Fatal(err)
	}
	onBroker := func() int {
		var n int
		if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM watermill_order_confirmed").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	const orders = 3
	writeConfirmations(t, pool, orders)
	outage := pgtest.RefuseInserts(t, pool, "watermill_order_confirmed", pgtest.AtInsert)
	relay, err := outbox.NewRelay(pool, brk.Publisher, watermill.NopLogger{}, outbox.RelayConfig{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()

	// One refused publish is enough: a relay that moves on after it has
	// acknowledged a row the broker does not have.
	waitFor(t, 30*time.Second, "the broker refusing a publish of the relay", func() bool { return outage.Count(t) >= 1 })
	if n := onBroker(); n != 0 {
		t.Fatalf("%d message(s) on the broker during the outage, want 0", n)
	}
	outage.Lift(t)

	// The relay acknowledges a row only once the broker has the message: a
	// row acknowledged while the message is missing was lost.
	deadline := time.Now().Add(30 * time.Second)
	for {
		backlog, err := queries.New(pool).OutboxBacklog(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		published := onBroker()
		if backlog == 0 && published < orders {
			t.Fatalf("the outbox says every row is relayed, the broker has %d of %d confirmations: the refused publishes were acked and lost", published, orders)
		}
		if backlog == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the broker came back: %d of %d confirmations on the broker, outbox backlog %d", published, orders, backlog)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
