package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaBacklog counts, for each topic of groups (topic -> consumer group,
// without BROKER_PREFIX), the records of <prefix><topic> on the Kafka
// cluster at brokers that the group (KafkaGroup) has not committed: in each
// partition, from its committed offset, or from the first record kept when
// it has none (where it would start), to the end. A topic that does not
// exist counts 0. An error wrapping errUnreachable means no broker answered
// within checkTimeout.
func KafkaBacklog(ctx context.Context, brokers []string, prefix string, groups map[string]string) (map[string]int64, error) {
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w: no KAFKA_BROKERS", errUnreachable)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("orderpaid broker check"), kgo.DialTimeout(checkTimeout))
	if err != nil {
		return nil, fmt.Errorf("create Kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	admin := kadm.NewClient(cl)
	backlog := make(map[string]int64, len(groups))
	for topic, group := range groups {
		n, err := kafkaUnread(ctx, admin, prefix+topic, KafkaGroup(prefix+topic, group))
		if err != nil {
			return nil, err
		}
		backlog[topic] = n
	}
	return backlog, nil
}

// kafkaUnread counts the records of topic after group's committed offsets.
func kafkaUnread(ctx context.Context, admin *kadm.Client, topic, group string) (int64, error) {
	ends, err := admin.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("list the end offsets of Kafka topic %s: %w", topic, err)
	}
	starts, err := admin.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("list the start offsets of Kafka topic %s: %w", topic, err)
	}
	committed, err := admin.FetchOffsets(ctx, group)
	if err == nil {
		err = committed.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		committed, err = nil, nil // no member ever joined: it would start at the first record
	}
	if err != nil {
		return 0, fmt.Errorf("fetch the offsets of Kafka group %s: %w", group, err)
	}
	var n int64
	ends.Each(func(end kadm.ListedOffset) {
		from := starts[topic][end.Partition].Offset
		if c, ok := committed.Lookup(topic, end.Partition); ok && c.At > from {
			from = c.At
		}
		n += max(end.Offset-from, 0)
	})
	return n, nil
}
