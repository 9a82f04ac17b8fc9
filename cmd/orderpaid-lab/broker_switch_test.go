package main

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// Switching BROKER from postgres to amqp while the postgres broker's tables
// hold confirmations no consumer has read used to strand them: the worker on
// RabbitMQ started, never read those tables, and the ten e-mails were never
// sent, with /readyz ok, the outbox backlog 0 and the poison queue empty.
// Now the worker on amqp refuses to start and says how many and where; the
// documented drain (a worker on postgres until the tables are read) sends
// them; then the worker on amqp starts.
func TestWorkerOnAnotherBrokerRefusesUnreadPostgresMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	t.Parallel()
	amqpEnv := merge(brokerEnv(t, "amqp"), map[string]string{"WEBHOOK_SECRET": testSecret})
	prefix := amqpEnv["BROKER_PREFIX"]
	t.Cleanup(func() { deleteAMQPTopology(t, prefix) })
	st := startSplitStack(t, merge(amqpEnv, map[string]string{"BROKER": "postgres"}))
	onPostgres := merge(st.env, map[string]string{"BROKER": "postgres"})
	onAMQP := merge(st.env, map[string]string{"BROKER": "amqp"})

	// Ten confirmations relayed to the postgres broker and not read yet: the
	// rows a worker on postgres leaves when it is stopped mid-way.
	const n = 10
	pool, err := postgres.Connect(t.Context(), st.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	pg, err := broker.New(t.Context(), config.Config{Broker: config.BrokerPostgres, BrokerPrefix: prefix}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	for _, s := range consumer.Subscriptions() {
		if err := pg.Provision(s.Topic, s.Group); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		var o struct{ ID string }
		call(t, "POST", st.api+"/orders", nil, map[string]any{"customer_id": "c1", "amount_cents": 1000 + i, "currency": "BRL"}, &o)
		msg, err := messages.NewOrderConfirmed(uuid.MustParse(o.ID))
		if err != nil {
			t.Fatal(err)
		}
		if err := pg.Publisher.Publish(messages.TopicOrderConfirmed, msg); err != nil {
			t.Fatal(err)
		}
	}

	// Without the check this worker starts and runs until the timeout (-1).
	code, out := runBinary(t, onAMQP, 30*time.Second, "worker")
	table := fmt.Sprintf("watermill_%s%s", prefix, messages.TopicOrderConfirmed)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("hold %d message(s) no consumer has read yet", n)) ||
		!strings.Contains(out, fmt.Sprintf("%d in %s unread by %s", n, table, consumer.HandlerOrderConfirmed)) ||
		!strings.Contains(out, "--abandon-postgres-backlog") {
		t.Fatalf("worker on amqp with %d unread confirmations in %s: exit %d, want 1 with the count, the table and the way out; output:\n%s", n, table, code, out)
	}

	// --abandon-postgres-backlog starts it anyway (the warning it logs is
	// checked in internal/platform/broker).
	stopServing(t, startServing(t, onAMQP, "--abandon-postgres-backlog"))
	var sent []map[string]any
	if call(t, "GET", st.fakes+"/notifications", nil, nil, &sent); len(sent) != 0 {
		t.Fatalf("before the drain: %d e-mails sent, want 0 (the worker on amqp cannot read them)", len(sent))
	}

	// The drain: a worker on postgres reads the tables and sends the e-mails.
	drain := startServing(t, onPostgres)
	eventually(t, 60*time.Second, "the stranded confirmations sent", func() (bool, string) {
		var sent []map[string]any
		call(t, "GET", st.fakes+"/notifications", nil, nil, &sent)
		backlog, err := broker.PostgresBacklog(t.Context(), pool, prefix, map[string]string{messages.TopicOrderConfirmed: consumer.HandlerOrderConfirmed})
		if err != nil {
			t.Fatal(err)
		}
		return len(sent) == n && backlog[messages.TopicOrderConfirmed] == 0, fmt.Sprintf("%d sent, %v unread", len(sent), backlog)
	})
	stopServing(t, drain)

	startServing(t, onAMQP)
}

// startServing starts `orderpaid worker <args>` as a real process and waits
// until it serves /metrics, which it does only once its consumers and relay
// started; it stops the worker with SIGTERM and wants exit 0.
func startServing(t *testing.T, env map[string]string, args ...string) *exec.Cmd {
	t.Helper()
	metrics := freeAddr(t)
	cmd := startWorkerProcess(t, merge(env, map[string]string{"METRICS_ADDR": metrics}), args...)
	eventually(t, 30*time.Second, "worker "+strings.Join(args, " ")+" serving", func() (bool, string) {
		return healthy("http://" + metrics + "/metrics")
	})
	t.Cleanup(func() { stopServing(t, cmd) })
	return cmd
}

// stopServing sends SIGTERM and wants exit 0 within 30s; a second call on
// the same process does nothing.
func stopServing(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("worker %v: %v after SIGTERM, want exit 0", cmd.Args[1:], err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("worker %v: no exit within 30s of SIGTERM", cmd.Args[1:])
	}
}

// deleteAMQPTopology removes the exchanges and queues a worker provisioned
// on RabbitMQ under prefix.
func deleteAMQPTopology(t *testing.T, prefix string) {
	conn, err := amqp091.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		t.Logf("clean RabbitMQ up: %v", err)
		return
	}
	defer conn.Close()
	for _, s := range consumer.Subscriptions() {
		ch, err := conn.Channel() // a failed delete closes its channel
		if err != nil {
			t.Logf("clean RabbitMQ up: %v", err)
			return
		}
		if _, err := ch.QueueDelete(prefix+s.Topic+"_"+s.Group, false, false, false); err != nil {
			t.Logf("delete RabbitMQ queue: %v", err)
			continue
		}
		if err := ch.ExchangeDelete(prefix+s.Topic, false, false); err != nil {
			t.Logf("delete RabbitMQ exchange: %v", err)
		}
		_ = ch.Close()
	}
}
