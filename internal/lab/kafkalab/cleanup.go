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
// list): what a scenario, bench or soak run created under its BROKER_PREFIX
// (internal/platform/broker/kafka.go: topic <topic>, group
// <topic>_<group>). Kafka refuses to delete a group with a member still in
// it: a worker killed less than a session ago (10s) is one, so a refused
// group is asked again until groupGone has passed, then reported.
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
	ctx, cancel := context.WithTimeout(context.Background(), groupGone+10*time.Second)
	defer cancel()
	listed, err := admin.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("delete the Kafka groups of %s: list the groups at %s: %w", prefix, brokers, err)
	}
	errs := []error{deleteGroups(ctx, admin, withPrefix(listed.Groups(), prefix))}
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

// groupGone is how long DeleteUnder asks again for a group Kafka refuses
// to delete because a member is still in it: a killed member's session
// (10s, internal/platform/broker's kafkaSessionTimeout) and a margin.
const groupGone = 15 * time.Second

// deleteGroups deletes groups, asking again every half second, until
// groupGone has passed, for those that still have a member.
func deleteGroups(ctx context.Context, admin *kadm.Client, groups []string) error {
	deadline := time.Now().Add(groupGone)
	for len(groups) > 0 {
		deleted, err := admin.DeleteGroups(ctx, groups...)
		if err != nil {
			return err
		}
		var errs []error
		groups = groups[:0]
		for _, r := range deleted {
			switch {
			case r.Err == nil || errors.Is(r.Err, kerr.GroupIDNotFound):
			case errors.Is(r.Err, kerr.NonEmptyGroup) && time.Now().Before(deadline):
				groups = append(groups, r.Group)
			default:
				errs = append(errs, fmt.Errorf("delete Kafka group %s: %w", r.Group, r.Err))
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if len(groups) > 0 {
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
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
