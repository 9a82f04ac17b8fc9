package kafkalab

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A ghost member, how the cluster removes one, and how the lab avoids most.
//
// A process killed while one of its consumers waits in its first JoinGroup
// leaves a ghost on kfake: kfake arms a member's session timer when it
// answers the member (group.reply in kfake's groups.go), the answer to a
// dead connection arms nothing, and a new member has no timer before that
// answer; the leader's SyncGroup (another member's) then stops the pending-sync timer, the one
// left that could remove it. The ghost keeps the partitions it was assigned
// and nobody reads them, until another rebalance waits out its rebalance
// timeout (30s) and drops it, or for ever when no rebalance comes. A real
// Kafka expires it after its session timeout. A member killed after its
// first answer has its session timer running, and goes after it as on Kafka.
//
// The cluster removes a ghost that sits in a Stable group one session after
// it last spoke, as Kafka would (ghosts.go). The lab also kills a worker
// only when every group is stable with one member per running worker
// (WaitGroupsStable). That does not rule ghosts out: right after a kill the
// killed worker's member is still there and the count is right while its
// replacement waits in its first JoinGroup, so the next kill can catch the
// replacement there (SIGKILLs every 3.5s in the soak made ghosts so).

// WaitGroupsStable waits until each of groups is Stable with exactly
// members members (one per running worker), or timeout passes; the error
// then says which group was not, and how.
func (c *Cluster) WaitGroupsStable(ctx context.Context, groups []string, members int, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.c.ListenAddrs()...), kgo.ClientID("orderpaid lab group check"))
	if err != nil {
		return fmt.Errorf("check the consumer groups: %w", err)
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		unstable, err := unstableGroup(ctx, admin, groups, members)
		if err == nil && unstable == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("consumer groups not stable within %s: %w", timeout, err)
			}
			return fmt.Errorf("consumer groups not stable within %s: %s", timeout, unstable)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// unstableGroup describes groups and returns the first one that is not
// Stable with members members, as "group G: STATE, N members, want M"; ""
// when all are.
func unstableGroup(ctx context.Context, admin *kadm.Client, groups []string, members int) (string, error) {
	described, err := admin.DescribeGroups(ctx, groups...)
	if err != nil {
		return "", fmt.Errorf("describe groups %s: %w", strings.Join(groups, ", "), err)
	}
	for _, name := range groups {
		g, ok := described[name]
		switch {
		case !ok || g.Err != nil:
			return fmt.Sprintf("group %s: not formed yet", name), nil
		case g.State != "Stable" || len(g.Members) != members:
			return fmt.Sprintf("group %s: %s, %d members, want %d", name, g.State, len(g.Members), members), nil
		}
	}
	return "", nil
}
