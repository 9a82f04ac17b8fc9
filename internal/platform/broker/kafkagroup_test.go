package broker_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Kafka consumer groups: members sharing partitions, rebalances, members
// that die, and what a worker on another broker sees of a group's backlog.

// Every group has its own offsets: each gets every message. The members of
// one group share the partitions: a second member joining (a rebalance,
// while the first one is reading) takes some of them, no message goes to
// both, and none is lost.
func TestKafkaGroupsAndMembers(t *testing.T) {
	t.Parallel()
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, "worker")
	bb.provision(t, "audit")

	deliveries := map[string]int{}
	perMember := [2]int{}
	collect := func(member int, m *message.Message) {
		deliveries[m.UUID]++
		perMember[member]++
		m.Ack()
	}
	_, ch1 := bb.subscribe(t, t.Context(), "worker")
	sent := bb.publish(t, 5)
	for range 5 {
		collect(0, receive(t, ch1))
	}
	// A message every 20ms, each for an order of its own, until the
	// second member has had some: the first reads until the rebalance
	// takes partitions from it.
	start := time.Now()
	_, ch2 := bb.subscribe(t, t.Context(), "worker")
	var rebalanced time.Duration
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for perMember[1] < 5 {
		select {
		case <-tick.C:
			sent = append(sent, bb.publish(t, 1)...)
		case m := <-ch1:
			collect(0, m)
		case m := <-ch2:
			if rebalanced == 0 {
				rebalanced = time.Since(start)
			}
			collect(1, m)
		case <-deadline:
			t.Fatalf("the second member received %d message(s) within 30s of joining (the first %d)", perMember[1], perMember[0])
		}
	}
	quiet := time.After(2 * time.Second) // time for the rest, and for a wrong extra copy to show up
	for waiting := true; waiting; {
		select {
		case m := <-ch1:
			collect(0, m)
		case m := <-ch2:
			collect(1, m)
		case <-quiet:
			waiting = false
		}
	}
	for _, m := range sent {
		if n := deliveries[m.UUID]; n != 1 {
			t.Errorf("message %s delivered %d times to the group, want once", m.UUID, n)
		}
	}
	t.Logf("%d messages; members received %d and %d; the second member's first message came %v after it subscribed",
		len(sent), perMember[0], perMember[1], rebalanced)

	_, audit := bb.subscribe(t, t.Context(), "audit")
	copies := map[string]bool{}
	for len(copies) < len(sent) {
		m := receive(t, audit)
		m.Ack()
		copies[m.UUID] = true
	}
}

// A worker on another broker refuses to start while a Kafka consumer group
// of its own has not committed everything, and says how many and where;
// once the group has read them it starts. Kafka is checked only when
// KAFKA_BROKERS is set: without it the worker never dials the default
// address.
func TestKafkaRefuseStrandedMessages(t *testing.T) {
	t.Parallel()
	brokers := kafkaBrokers(t)
	prefix := "s" + tempdb.RandomHex(4) + "_"
	bb := kafkaSetup(t, brokers, prefix)
	bb.provision(t, "worker")
	bb.publish(t, 3)
	pool, _ := pgtest.NewDatabase(t)
	groups := map[string]string{bb.topic: "worker"}
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&log, nil))
	cfg := config.Config{Broker: config.BrokerNATS, BrokerPrefix: prefix, KafkaBrokers: brokers, KafkaBrokersSet: true}

	err := broker.RefuseStrandedMessages(t.Context(), cfg, pool, groups, false, logger)
	group := broker.KafkaGroup(prefix+bb.topic, "worker")
	for _, want := range []string{"BROKER=nats", "Kafka's consumer groups", "hold 3 message(s)", "3 in group " + group, "BROKER=kafka orderpaid worker", "KAFKA_BROKERS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}

	_, ch := bb.subscribe(t, t.Context(), "worker")
	for range 3 {
		receive(t, ch).Ack()
	}
	// The subscriber commits each offset after its ack, so the last commit
	// may land a moment after the last Ack returned.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := broker.RefuseStrandedMessages(t.Context(), cfg, pool, groups, false, logger)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the group read everything, still refused 10s later: %v", err)
		}
	}

	cfg.KafkaBrokers, cfg.KafkaBrokersSet = []string{"127.0.0.1:1"}, false
	if err := broker.RefuseStrandedMessages(t.Context(), cfg, pool, groups, false, logger); err != nil {
		t.Errorf("KAFKA_BROKERS not set: %v", err)
	}
	if strings.Contains(log.String(), "broker=kafka") {
		t.Errorf("KAFKA_BROKERS not set, and the worker looked for Kafka:\n%s", log.String())
	}
}

// A rebalance waits for the message in hand: a second member joining while
// the first holds an unacked message gets nothing until it is acked; then
// the first member seeks back what it had polled and not handed out, lets
// the rebalance run, and the second member reads its partitions from the
// committed offsets. Every message is delivered once.
func TestKafkaRebalanceWaitsForTheMessageInHand(t *testing.T) {
	t.Parallel()
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, "worker")
	sent := bb.publish(t, 24) // 24 orders: every partition
	_, ch1 := bb.subscribe(t, t.Context(), "worker")
	inHand := receive(t, ch1)

	_, ch2 := bb.subscribe(t, t.Context(), "worker")
	select {
	case m := <-ch2:
		t.Fatalf("the second member got %s while the first held %s unacked", m.UUID, inHand.UUID)
	case m := <-ch1:
		t.Fatalf("the first member handed out %s before %s was settled", m.UUID, inHand.UUID)
	case <-time.After(3 * time.Second): // three heartbeats: the rebalance is waiting
	}
	acked := time.Now()
	inHand.Ack()
	deliveries := map[string]int{inHand.UUID: 1}
	perMember := [2]int{1, 0}
	var second time.Duration
	deadline := time.After(30 * time.Second)
	for len(deliveries) < len(sent) {
		select {
		case m := <-ch1:
			deliveries[m.UUID]++
			perMember[0]++
			m.Ack()
		case m := <-ch2:
			if second == 0 {
				second = time.Since(acked)
			}
			deliveries[m.UUID]++
			perMember[1]++
			m.Ack()
		case <-deadline:
			t.Fatalf("received %d of %d messages within 30s (members %v)", len(deliveries), len(sent), perMember)
		}
	}
	select {
	case m := <-ch1:
		deliveries[m.UUID]++
	case m := <-ch2:
		deliveries[m.UUID]++
	case <-time.After(time.Second):
	}
	for _, m := range sent {
		if n := deliveries[m.UUID]; n != 1 {
			t.Errorf("message %s delivered %d times, want once", m.UUID, n)
		}
	}
	if perMember[1] == 0 {
		t.Errorf("the second member got no partition (members %v)", perMember)
	}
	t.Logf("members received %v; the second member's first message came %v after the ack", perMember, second)
}

// A member that dies (a process killed: no LeaveGroup, no commit) keeps
// its partitions until the group gives up on it, kafkaSessionTimeout (10s)
// after its last heartbeat; then the next member reads them from the last
// committed offset: the record it had in hand comes again, the one it had
// committed does not.
func TestKafkaDeadMembersPartitionsMoveAfterItsSession(t *testing.T) {
	t.Parallel()
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, "worker")
	var orders []string
	for range 12 {
		orders = append(orders, watermill.NewUUID())
	}
	sent := bb.publishFor(t, orders...)

	// The member that dies: a plain group client, as the subscriber
	// configures it, whose connections are cut at once.
	var cut cutConns
	dead, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.Dialer(cut.dial),
		kgo.ConsumerGroup(broker.KafkaGroup(bb.topic, "worker")), kgo.ConsumeTopics(bb.topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.RetryTimeout(time.Second)) // so that closing it does not wait out 30s of retries
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // at once: its connections are cut, it cannot leave the group
		dead.AllowRebalance()
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		_ = dead.LeaveGroupContext(gone)
		dead.Close()
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var records []*kgo.Record
	for len(records) < 2 && ctx.Err() == nil {
		records = append(records, dead.PollRecords(ctx, 2-len(records)).Records()...)
	}
	if len(records) < 2 {
		t.Fatalf("the first member read %d records", len(records))
	}
	if err := dead.CommitRecords(ctx, records[0]); err != nil {
		t.Fatal(err)
	}
	cut.kill() // records[1] in hand
	died := time.Now()

	_, ch := bb.subscribe(t, t.Context(), "worker")
	committed := headerValue(records[0], broker.KafkaUUIDHeader)
	got := map[string]int{}
	var first time.Duration
	for len(got) < len(sent)-1 {
		m := receiveWithin(t, ch, 30*time.Second)
		if first == 0 {
			first = time.Since(died)
		}
		m.Ack()
		got[m.UUID]++
	}
	if got[committed] != 0 {
		t.Errorf("the record the dead member committed came again")
	}
	if inHand := headerValue(records[1], broker.KafkaUUIDHeader); got[inHand] != 1 {
		t.Errorf("the record in the dead member's hand came %d times, want once", got[inHand])
	}
	t.Logf("the next member's first message came %v after the first member died", first)
}

// cutConns dials connections it can cut all at once, as a killed process's
// are, and refuses new ones from then on.
type cutConns struct {
	mu    sync.Mutex
	dead  bool
	conns []net.Conn
}

func (c *cutConns) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return nil, net.ErrClosed
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

func (c *cutConns) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
	for _, conn := range c.conns {
		conn.Close()
	}
}
