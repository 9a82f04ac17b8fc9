package broker_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// kafkaBrokers returns the Kafka cluster a test runs against: the one in
// TEST_KAFKA_BROKERS (comma list) when set, else an in-process kfake
// cluster of three brokers on ports of its own, closed when the test ends.
// kfake speaks the real protocol (consumer groups, rebalances, offset
// commits), so the tests need no Kafka server.
func kafkaBrokers(t *testing.T) []string {
	t.Helper()
	if v := os.Getenv("TEST_KAFKA_BROKERS"); v != "" {
		return strings.Split(v, ",")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatalf("start an in-process Kafka cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// kafkaSetup connects a kafka Broker (with prefix as BROKER_PREFIX) on a
// fresh topic.
func kafkaSetup(t *testing.T, brokers []string, prefix string) bundle {
	t.Helper()
	cfg := config.Config{Broker: config.BrokerKafka, KafkaBrokers: brokers, BrokerPrefix: prefix}
	b, err := broker.New(t.Context(), cfg, nil, watermill.NopLogger{})
	if err != nil {
		t.Fatalf("connect to kafka: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close kafka broker: %v", err)
		}
	})
	return bundle{b: b, topic: "brokertest_" + tempdb.RandomHex(6)}
}

// kafkaAdmin is an admin client of the cluster, closed when the test ends.
func kafkaAdmin(t *testing.T, brokers []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// kafkaUnread is what group has not committed on topic (both unprefixed).
func kafkaUnread(t *testing.T, brokers []string, prefix, topic, group string) int64 {
	t.Helper()
	n, err := broker.KafkaBacklog(t.Context(), brokers, prefix, map[string]string{topic: group})
	if err != nil {
		t.Fatalf("count what %s has not committed on %s: %v", group, topic, err)
	}
	return n[topic]
}

// publishFor publishes one message per order id in orders (an id may
// repeat), in that order, with the metadata the service sets.
func (bb bundle) publishFor(t *testing.T, orders ...string) []*message.Message {
	t.Helper()
	msgs := make([]*message.Message, len(orders))
	for i, order := range orders {
		msgs[i] = message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, `{"order_id":%q,"n":%d}`, order, i))
		msgs[i].Metadata.Set("order_id", order)
		msgs[i].Metadata.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		msgs[i].Metadata.Set("outbox_write_id", watermill.NewUUID())
	}
	if err := bb.b.Publisher.Publish(bb.topic, msgs...); err != nil {
		t.Fatalf("publish to %s: %v", bb.topic, err)
	}
	return msgs
}

// The publisher keys each record by its order id and puts the message UUID
// and every metadata entry in headers: one order's messages land on one
// partition in the order published, and a consumer gets back the message
// as it was sent (UUID, payload, metadata), so the inbox keys on the same
// id on Kafka as elsewhere. Provision made the topic with several
// partitions, so orders do spread.
func TestKafkaRecordsAreKeyedByOrderAndKeepMessageIDs(t *testing.T) {
	t.Parallel()
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, "worker")
	var orders []string
	for range 8 {
		o := watermill.NewUUID()
		orders = append(orders, o, o, o) // three messages per order, back to back
	}
	sent := bb.publishFor(t, orders...)

	// Read the records themselves, as any Kafka consumer would.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(bb.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var records []*kgo.Record
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for len(records) < len(sent) && ctx.Err() == nil {
		records = append(records, cl.PollFetches(ctx).Records()...)
	}
	if len(records) != len(sent) {
		t.Fatalf("read %d records, want %d", len(records), len(sent))
	}
	byUUID := map[string]*message.Message{}
	for _, m := range sent {
		byUUID[m.UUID] = m
	}
	partitionOf := map[string]int32{} // order -> partition
	lastOffset := map[string]int64{}  // order -> offset of its last record
	indexOf := map[string]int{}       // UUID -> position in sent
	for i, m := range sent {
		indexOf[m.UUID] = i
	}
	lastIndex := map[string]int{}
	for _, r := range records {
		id := headerValue(r, broker.KafkaUUIDHeader)
		m, ok := byUUID[id]
		if !ok {
			t.Fatalf("record at partition %d offset %d has UUID header %q, not a message sent", r.Partition, r.Offset, id)
		}
		order := m.Metadata.Get("order_id")
		if string(r.Key) != order {
			t.Errorf("record of %s keyed %q, want its order id %s", id, r.Key, order)
		}
		for k, v := range m.Metadata {
			if got := headerValue(r, k); got != v {
				t.Errorf("record of %s: header %s = %q, want %q", id, k, got, v)
			}
		}
		if p, seen := partitionOf[order]; seen && p != r.Partition {
			t.Errorf("order %s on partitions %d and %d, want one", order, p, r.Partition)
		}
		if seen := lastOffset[order]; seen != 0 && r.Offset < seen || lastIndex[order] > indexOf[id] {
			t.Errorf("order %s: message %d at offset %d comes before an earlier one", order, indexOf[id], r.Offset)
		}
		partitionOf[order], lastOffset[order], lastIndex[order] = r.Partition, r.Offset, indexOf[id]
	}
	if used := slices.Compact(slices.Sorted(maps.Values(partitionOf))); len(used) < 2 {
		t.Errorf("8 orders all on partition(s) %v: the topic was not made with several partitions", used)
	}

	_, ch := bb.subscribe(t, t.Context(), "worker")
	got := map[string]*message.Message{}
	for len(got) < len(sent) {
		m := receive(t, ch)
		m.Ack()
		got[m.UUID] = m
	}
	for _, s := range sent {
		g := got[s.UUID]
		if string(g.Payload) != string(s.Payload) || !maps.Equal(g.Metadata, s.Metadata) {
			t.Errorf("sent %s %s %v\nreceived %s %v", s.UUID, s.Payload, s.Metadata, g.Payload, g.Metadata)
		}
	}
}

func headerValue(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// A nacked message comes again (the subscriber seeks its partition back),
// before the message published after it for the same order, and the group's
// offsets cover both only once both are acked.
func TestKafkaNackedMessageIsRedeliveredInOrder(t *testing.T) {
	t.Parallel()
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, "worker")
	order := watermill.NewUUID()
	sent := bb.publishFor(t, order, order)
	_, ch := bb.subscribe(t, t.Context(), "worker")

	var got []string
	first := receive(t, ch)
	got = append(got, first.UUID)
	first.Nack()
	again := receive(t, ch)
	got = append(got, again.UUID)
	if n := kafkaUnread(t, brokers, "", bb.topic, "worker"); n != 2 {
		t.Errorf("after a nack, %d record(s) uncommitted, want 2", n)
	}
	again.Ack()
	next := receive(t, ch)
	got = append(got, next.UUID)
	next.Ack()
	if want := []string{sent[0].UUID, sent[0].UUID, sent[1].UUID}; !slices.Equal(got, want) {
		t.Errorf("received %v, want %v (the nacked one again, then the next)", got, want)
	}
	eventually(t, func() bool { return kafkaUnread(t, brokers, "", bb.topic, "worker") == 0 }, "both acked messages committed")
}

// The offset is committed when the handler acks: after the first member
// of a group acked some messages and closed (one more in hand, never
// acked), a second member gets exactly the others, the one left in hand
// included, on every partition.
func TestKafkaNextMemberResumesAfterTheLastAck(t *testing.T) {
	t.Parallel()
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, "worker")
	var orders []string
	for range 12 {
		orders = append(orders, watermill.NewUUID())
	}
	sent := bb.publishFor(t, orders...)

	sub, ch := bb.subscribe(t, t.Context(), "worker")
	acked := map[string]bool{}
	for range 5 {
		m := receive(t, ch)
		m.Ack()
		acked[m.UUID] = true
	}
	inHand := receive(t, ch) // the handler never finishes
	if err := sub.Close(); err != nil {
		t.Fatalf("close the first member: %v", err)
	}
	if n := kafkaUnread(t, brokers, "", bb.topic, "worker"); n != int64(len(sent)-len(acked)) {
		t.Errorf("after 5 acks, %d record(s) uncommitted, want %d", n, len(sent)-len(acked))
	}

	_, ch = bb.subscribe(t, t.Context(), "worker")
	got := map[string]int{}
	for len(got) < len(sent)-len(acked) {
		m := receive(t, ch)
		m.Ack()
		got[m.UUID]++
		if acked[m.UUID] {
			t.Errorf("message %s acked by the first member came again", m.UUID)
		}
	}
	if got[inHand.UUID] != 1 {
		t.Errorf("the message in hand when the first member closed came %d times, want once", got[inHand.UUID])
	}
	select {
	case m := <-ch:
		t.Errorf("message %s came again after every message was received", m.UUID)
		m.Ack()
	case <-time.After(500 * time.Millisecond):
	}
	eventually(t, func() bool { return kafkaUnread(t, brokers, "", bb.topic, "worker") == 0 }, "every message committed")
}

// Provision creates the topic, so a message published before the group's
// first member joined waits for it; under BROKER_PREFIX the topic and the
// group carry the prefix on the cluster.
func TestKafkaProvisionAndPrefix(t *testing.T) {
	t.Parallel()
	brokers := kafkaBrokers(t)
	prefix := "t" + tempdb.RandomHex(4) + "_"
	bb := kafkaSetup(t, brokers, prefix)
	bb.provision(t, "worker")
	topics, err := kafkaAdmin(t, brokers).ListTopics(t.Context(), prefix+bb.topic)
	if err != nil || !topics.Has(prefix+bb.topic) {
		t.Fatalf("topic %s not on the cluster after Provision (err %v): %v", prefix+bb.topic, err, topics.Names())
	}
	if n := len(topics[prefix+bb.topic].Partitions); n < 2 {
		t.Errorf("topic made with %d partition(s), want several", n)
	}
	sent := bb.publish(t, 1)[0]
	_, ch := bb.subscribe(t, t.Context(), "worker")
	got := receive(t, ch)
	got.Ack()
	if got.UUID != sent.UUID {
		t.Errorf("got %s, want %s", got.UUID, sent.UUID)
	}
	group := broker.KafkaGroup(prefix+bb.topic, "worker")
	eventually(t, func() bool {
		offsets, err := kafkaAdmin(t, brokers).FetchOffsets(t.Context(), group)
		return err == nil && len(offsets[prefix+bb.topic]) > 0
	}, "group "+group+" holding offsets")
}

func TestKafkaPing(t *testing.T) {
	t.Parallel()
	bb := kafkaSetup(t, kafkaBrokers(t), "")
	if err := bb.b.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// New fails at once when no broker answers, naming the address and the
// variable to set.
func TestKafkaNewExplainsAnUnreachableCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerKafka, KafkaBrokers: []string{"127.0.0.1:1"}}, nil, watermill.NopLogger{})
	if err == nil {
		b.Close()
		t.Fatal("New succeeded on port 1")
	}
	for _, want := range []string{"127.0.0.1:1", "KAFKA_BROKERS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("New took %v to give up", d)
	}
}

// eventually waits up to 10s for cond.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
