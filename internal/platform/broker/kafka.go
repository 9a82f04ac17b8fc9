package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Settings of the Kafka broker.
const (
	// kafkaPartitions is how many partitions Provision gives a topic it
	// creates: how many members of one group can work at once. A topic
	// that exists already keeps its own.
	kafkaPartitions = 3
	// kafkaTimeout bounds one call to the cluster: a publish, a commit,
	// the creation of a topic, the first contact.
	kafkaTimeout = 10 * time.Second
	// kafkaSessionTimeout is how long the group waits for a member that
	// stopped sending heartbeats (a process killed, not stopped) before it
	// hands its partitions to the others. They send one every
	// kafkaHeartbeat. A member that leaves cleanly (Close) hands them over
	// at once.
	kafkaSessionTimeout = 10 * time.Second
	kafkaHeartbeat      = time.Second
	// kafkaRebalanceTimeout is how long a rebalance waits for a member to
	// finish the records it holds (see kafkaGroupClient) before it drops it
	// from the group.
	kafkaRebalanceTimeout = 30 * time.Second
)

// FaultBeforeOffsetCommit fires on Kafka after a message (or a batch) was
// settled, its effects committed and acked, and before its offset is
// committed: a worker killed there leaves the group's position behind the
// work it did (the scenario offset-commit-lost).
const FaultBeforeOffsetCommit = "kafka.before_offset_commit"

// KafkaUUIDHeader is the record header that carries the message UUID, as
// watermill's own marshalers name it on every broker.
const KafkaUUIDHeader = "_watermill_message_uuid"

// metadataOrderID is the metadata key of the order id every message carries
// (messages.MetadataOrderID): the record key on Kafka, the lane key on the
// postgres broker (LaneKeyMessage).
const metadataOrderID = "order_id"

// newKafka connects to the Kafka cluster at brokers (KAFKA_BROKERS) with
// franz-go (kgo), behind watermill's message.Publisher and
// message.Subscriber. For a watermill topic such as order_paid and a
// consumer group such as worker, the cluster holds:
//
//   - topic "order_paid", kafkaPartitions partitions, the cluster's default
//     replication and retention. Created by Provision, and by the publisher
//     before its first record to a topic, unless it exists (a cluster may
//     refuse to create topics on first use: auto.create.topics.enable).
//   - consumer group "order_paid_worker" (<topic>_<group>, as the AMQP
//     queue and the NATS durable are named), one per (topic, consumer
//     group). Its members share the topic's partitions, each partition read
//     by one member at a time, and the group keeps one committed offset per
//     partition: where it resumes. A group with no offset yet starts at the
//     first record kept (ConsumeResetOffset AtStart), so what was published
//     before its first member joined waits for it, as long as the topic's
//     retention keeps it: Kafka deletes records by age, read or not.
//
// Publishing: each message is one record whose key is the order id (the
// message's order_id metadata, its UUID when there is none): the
// partitioner hashes the key, so one order's messages land on one
// partition, in the order they were published, and its group member reads
// them in that order. The UUID travels in the KafkaUUIDHeader header, each
// metadata entry (trace context, order_id, outbox_write_id) in a header of
// its own. Publish returns once the cluster has every record (acks=all;
// franz-go's idempotent producer, so a retry inside the client is not
// written twice). A relay that publishes a message again after a crash
// writes a second record: the consumers' guards absorb it.
//
// Consuming: see kafkaSubscriber (per message) and kafkaBatchSource
// (CONSUMER_BATCH_SIZE > 1). Both commit a record's offset only after the
// handler settled it; what a member had not committed when it went away
// is read again by the partition's next owner.
//
// Why franz-go and not watermill-kafka (Sarama): watermill-kafka v3.0.6
// checks its session after the ack and gives up the mark when the
// subscriber is closing, so the last message acked before a graceful
// shutdown is delivered again every time; it has no batch consumer; and
// franz-go can hold a rebalance until the records in hand are committed
// (BlockRebalanceOnPoll), seek a partition back (SetOffsets), and its
// in-process cluster, kfake, is what the tests run against.
func newKafka(ctx context.Context, brokers []string, logger watermill.LoggerAdapter) (*Broker, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("orderpaid"),
		kgo.ProducerLinger(0), // a relay's Publish waits for its records: do not hold them
		kgo.RecordDeliveryTimeout(kafkaTimeout),
	)
	if err != nil {
		return nil, fmt.Errorf("create Kafka client: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	defer cancel()
	if err := cl.Ping(pingCtx); err != nil {
		cl.Close()
		return nil, kafkaUnreachable(brokers, err)
	}
	topics := &kafkaTopics{admin: kadm.NewClient(cl)}
	pub := &kafkaPublisher{cl: cl, topics: topics}
	b := &Broker{
		Name:           "kafka",
		Publisher:      pub,
		BatchPublisher: pub, // ProduceSync pipelines the records of one call already
		provision:      func(topic, _ string) error { return topics.ensure(topic) },
		ping:           cl.Ping,
	}
	b.newSubscriber = func(group string) (message.Subscriber, error) {
		return newKafkaSubscriber(brokers, group, topics, logger, b.faults), nil
	}
	b.batchSource = func(topic, group string, size int) (BatchSource, error) {
		if err := topics.ensure(topic); err != nil {
			return nil, err
		}
		return &kafkaBatchSource{brokers: brokers, topic: topic, group: KafkaGroup(topic, group), size: size, faults: b.faults}, nil
	}
	return b, nil
}

// KafkaGroup is the consumer group of group on a (prefixed) topic:
// <topic>_<group>. BROKER_PREFIX is then in the group's name too, so
// deployments sharing a cluster never share a group.
func KafkaGroup(topic, group string) string { return topic + "_" + group }

// kafkaUnreachable says what to do when no broker of KAFKA_BROKERS answers.
func kafkaUnreachable(brokers []string, err error) error {
	return fmt.Errorf("connect to Kafka: is a Kafka broker running at %s (KAFKA_BROKERS)? set KAFKA_BROKERS to your cluster's host:port list, or BROKER=postgres: %w",
		strings.Join(brokers, ","), err)
}

// kafkaTopics creates topics, once each per process.
type kafkaTopics struct {
	admin *kadm.Client
	mu    sync.Mutex
	known map[string]bool
}

// ensure creates topic with kafkaPartitions partitions unless it exists.
// Several replicas may race here: the losers get TopicAlreadyExists, which
// is success.
func (t *kafkaTopics) ensure(topic string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.known[topic] {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaTimeout)
	defer cancel()
	_, err := t.admin.CreateTopic(ctx, kafkaPartitions, -1, nil, topic) // -1: the cluster's replication factor
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create Kafka topic %s: %w", topic, err)
	}
	if t.known == nil {
		t.known = map[string]bool{}
	}
	t.known[topic] = true
	return nil
}

// kafkaPublisher produces watermill messages as Kafka records (see newKafka).
type kafkaPublisher struct {
	cl     *kgo.Client
	topics *kafkaTopics
}

// Publish writes msgs to topic, in order, and returns once the cluster has
// all of them, or the first error.
func (p *kafkaPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := p.topics.ensure(topic); err != nil {
		return err
	}
	records := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		records[i] = kafkaRecord(topic, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaTimeout)
	defer cancel()
	if err := p.cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		return fmt.Errorf("produce %d record(s) to Kafka topic %s: %w", len(records), topic, err)
	}
	return nil
}

// Close closes the broker's client (the publisher's and Provision's).
func (p *kafkaPublisher) Close() error {
	p.cl.Close()
	return nil
}

// kafkaRecord is the record of m on topic: key the order id, value the
// payload, headers the UUID and the metadata (sorted, so that one message
// always makes the same record).
func kafkaRecord(topic string, m *message.Message) *kgo.Record {
	key := m.Metadata.Get(metadataOrderID)
	if key == "" {
		key = m.UUID
	}
	headers := make([]kgo.RecordHeader, 0, len(m.Metadata)+1)
	headers = append(headers, kgo.RecordHeader{Key: KafkaUUIDHeader, Value: []byte(m.UUID)})
	for _, k := range slices.Sorted(maps.Keys(m.Metadata)) {
		if k != KafkaUUIDHeader {
			headers = append(headers, kgo.RecordHeader{Key: k, Value: []byte(m.Metadata[k])})
		}
	}
	return &kgo.Record{Topic: topic, Key: []byte(key), Value: m.Payload, Headers: headers}
}

// kafkaMessage is the watermill message of a record: kafkaRecord undone.
func kafkaMessage(r *kgo.Record) *message.Message {
	var uuid string
	metadata := make(message.Metadata, len(r.Headers))
	for _, h := range r.Headers {
		if h.Key == KafkaUUIDHeader {
			uuid = string(h.Value)
		} else {
			metadata.Set(h.Key, string(h.Value))
		}
	}
	msg := message.NewMessage(uuid, r.Value)
	msg.Metadata = metadata
	return msg
}
