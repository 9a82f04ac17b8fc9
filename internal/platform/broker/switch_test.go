package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// switchSetup is a postgres broker under a BROKER_PREFIX of its own, and one
// topic with the consumer group a worker reads it as.
type switchSetup struct {
	pool          *pgxpool.Pool
	b             *broker.Broker
	prefix, topic string
	groups        map[string]string // topic -> group, as startWorker passes them
}

func newSwitchSetup(t *testing.T) switchSetup {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	prefix := "p" + tempdb.RandomHex(6) + "_"
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerPostgres, BrokerPrefix: prefix}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return switchSetup{pool: pool, b: b, prefix: prefix, topic: "order_confirmed", groups: map[string]string{"order_confirmed": "order_confirmed"}}
}

// backlog is PostgresBacklog's count for the setup's topic.
func (s switchSetup) backlog(t *testing.T) int64 {
	t.Helper()
	n, err := broker.PostgresBacklog(t.Context(), s.pool, s.prefix, s.groups)
	if err != nil {
		t.Fatal(err)
	}
	return n[s.topic]
}

func (s switchSetup) publish(t *testing.T, n int) {
	t.Helper()
	for range n {
		if err := s.b.Publisher.Publish(s.topic, message.NewMessage(watermill.NewUUID(), []byte(`{}`))); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll subscribes as group, acks n messages and closes the subscriber
// (which commits the acks).
func (s switchSetup) readAll(t *testing.T, group string, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sub, err := s.b.Subscriber(group)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := sub.Subscribe(ctx, s.topic)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		receive(t, ch).Ack()
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
}

// The count is what the worker's group has not read, after its position:
// not what another group read, and all of it before the group has read
// anything.
func TestPostgresBacklogCountsWhatTheGroupHasNotRead(t *testing.T) {
	t.Parallel()
	s := newSwitchSetup(t)
	if n := s.backlog(t); n != 0 {
		t.Fatalf("no table yet: backlog %d, want 0", n)
	}
	if err := s.b.Provision(s.topic, s.groups[s.topic]); err != nil {
		t.Fatal(err)
	}
	if n := s.backlog(t); n != 0 {
		t.Fatalf("empty tables: backlog %d, want 0", n)
	}
	s.publish(t, 3)
	if n := s.backlog(t); n != 3 {
		t.Fatalf("3 published, none read: backlog %d, want 3", n)
	}
	s.readAll(t, "another_group", 3)
	if n := s.backlog(t); n != 3 {
		t.Fatalf("3 read by another group only: backlog %d, want 3", n)
	}
	s.readAll(t, s.groups[s.topic], 3)
	if n := s.backlog(t); n != 0 {
		t.Fatalf("3 read by the group: backlog %d, want 0", n)
	}
	s.publish(t, 2)
	if n := s.backlog(t); n != 2 {
		t.Fatalf("2 more published after the group's position: backlog %d, want 2", n)
	}
	// Another prefix names other tables.
	other, err := broker.PostgresBacklog(t.Context(), s.pool, "", s.groups)
	if err != nil || other[s.topic] != 0 {
		t.Fatalf("without the prefix: backlog %v, %v, want 0 (no such table)", other, err)
	}
}

// On another broker the worker refuses while the postgres broker's tables
// hold unread messages, and says how many, where, and how to drain them;
// with abandon it only warns; on postgres, and once drained, it starts.
func TestRefuseStrandedMessages(t *testing.T) {
	t.Parallel()
	s := newSwitchSetup(t)
	if err := s.b.Provision(s.topic, s.groups[s.topic]); err != nil {
		t.Fatal(err)
	}
	s.publish(t, 4)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	refuse := func(kind string, abandon bool) error {
		cfg := config.Config{Broker: kind, BrokerPrefix: s.prefix}
		return broker.RefuseStrandedMessages(t.Context(), cfg, s.pool, s.groups, abandon, logger)
	}
	for _, kind := range []string{config.BrokerAMQP, config.BrokerNATS} {
		err := refuse(kind, false)
		if err == nil {
			t.Fatalf("BROKER=%s with 4 unread messages: started, want a refusal", kind)
		}
		for _, want := range []string{"BROKER=" + kind, "4 message(s)", fmt.Sprintf("4 in watermill_%sorder_confirmed unread by order_confirmed", s.prefix),
			"BROKER=postgres orderpaid worker", "--abandon-postgres-backlog"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("BROKER=%s: error %q lacks %q", kind, err, want)
			}
		}
	}
	if err := refuse(config.BrokerAMQP, true); err != nil {
		t.Fatalf("with abandon: %v, want a start", err)
	}
	if !strings.Contains(logs.String(), `"level":"WARN"`) || !strings.Contains(logs.String(), `"unread":4`) {
		t.Errorf("with abandon: log %q, want a WARN with the count", logs.String())
	}
	if err := refuse(config.BrokerPostgres, false); err != nil {
		t.Fatalf("BROKER=postgres reads those tables itself: %v, want a start", err)
	}
	s.readAll(t, s.groups[s.topic], 4)
	if err := refuse(config.BrokerAMQP, false); err != nil {
		t.Fatalf("drained: %v, want a start", err)
	}
}

// A broker the worker does not use and cannot reach is not checked: the
// worker starts, and one Info line per broker says it was not checked.
func TestRefuseStrandedMessagesSkipsAnUnreachableBroker(t *testing.T) {
	t.Parallel()
	s := newSwitchSetup(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	cfg := config.Config{Broker: config.BrokerPostgres, BrokerPrefix: s.prefix,
		AMQPURL: "amqp://guest:guest@127.0.0.1:1/", NATSURL: "nats://127.0.0.1:1"}
	if err := broker.RefuseStrandedMessages(t.Context(), cfg, s.pool, s.groups, false, logger); err != nil {
		t.Fatalf("RabbitMQ and NATS down: %v, want a start", err)
	}
	for _, b := range []string{config.BrokerAMQP, config.BrokerNATS} {
		if !strings.Contains(logs.String(), `"msg":"broker not reachable, so not checked`) || !strings.Contains(logs.String(), `"broker":"`+b+`"`) {
			t.Errorf("%s down: log %q, want a line saying it was not checked", b, logs.String())
		}
	}
	if strings.Contains(logs.String(), "guest:guest") {
		t.Errorf("log %q holds the password of AMQP_URL", logs.String())
	}
}
