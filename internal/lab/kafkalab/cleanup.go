package kafkalab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DeleteUnder deletes every consumer group and every topic whose name
// begins with prefix on the cluster at brokers (a KAFKA_BROKERS comma
// list): what a bench or soak run created under its BROKER_PREFIX
// (internal/platform/broker/kafka.go: topic <topic>, group
// <topic>_<group>). A group with a member still in it (one killed less than a session timeout ago) is refused by Kafka
// and reported; run it again once the session has ended.
func DeleteUnder(brokers, prefix string) error {
	if prefix == "" {
		return errors.New("delete Kafka topics and groups: no prefix, refusing to delete everything")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ClientID("orderpaid lab clean-up"))
	if err != nil {
		return fmt.Errorf("delete the Kafka topics of %s: %w", prefix, err)
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listed, err := admin.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("delete the Kafka groups of %s: list the groups at %s: %w", prefix, brokers, err)
	}
	var errs []error
	if groups := withPrefix(listed.Groups(), prefix); len(groups) > 0 {
		deleted, err := admin.DeleteGroups(ctx, groups...)
		errs = append(errs, err)
		for _, r := range deleted {
			if r.Err != nil && !errors.Is(r.Err, kerr.GroupIDNotFound) {
				errs = append(errs, fmt.Errorf("delete Kafka group %s: %w", r.Group, r.Err))
			}
		}
	}
	topics, err := admin.ListTopics(ctx)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("delete the Kafka topics of %s: list them: %w", prefix, err))...)
	}
	if names := withPrefix(topics.Names(), prefix); len(names) > 0 {
		deleted, err := admin.DeleteTopics(ctx, names...)
		errs = append(errs, err)
		for _, r := range deleted {
			if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				errs = append(errs, fmt.Errorf("delete Kafka topic %s: %w", r.Topic, r.Err))
			}
		}
	}
	return errors.Join(errs...)
}

// withPrefix returns the names that begin with prefix.
func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
