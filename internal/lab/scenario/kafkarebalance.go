package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// A rebalance in the middle of a batch. A member of a Kafka group holds a
// batch it applied and has not committed when a second member joins: the
// rebalance waits for the batch (the consumer's BlockRebalanceOnPoll), so
// no partition moves under it. Then the first member dies before its
// offset commit (a node lost, an OOM kill, a deploy that does not wait):
// the rebalance completes without it once its session ends, and the
// partitions move to the new member, which reads them from the last
// committed offset: the batch again.

const rebalanceOrders = 4

// heldFor is how long the scenario watches the rebalance wait for the
// first worker before it kills it: three of its heartbeats (1s each), each
// answered that a rebalance is in progress, and it does not rejoin.
const heldFor = 3 * time.Second

func rebalanceMidBatch() *Scenario {
	protected, without, settled := readAgainFromLastCommit(rebalanceOrders)
	return &Scenario{
		Name: "rebalance-mid-batch",
		Summary: "on Kafka, a second worker joins order_paid's group while the first holds a batch it applied and has " +
			"not committed; the rebalance waits for it, the first is killed before its offset commit, and the " +
			"partitions move to the second, which reads them again from the last committed offset",
		Repeated: "order_paid records held through a rebalance, read again by the new owner",
		Orders:   rebalanceOrders,
		Broker:   config.BrokerKafka,
		BrokerReason: "the rebalance and the committed offset are a Kafka group's; on the other brokers a consumer that " +
			"dies with messages unacked is worker-restart",
		Protected:   protected,
		Without:     without,
		Settled:     settled,
		WithEffects: nothingReadAgain(rebalanceOrders),
		Run: func(ctx context.Context, s *Stage) error {
			if err := ordersWaiting(ctx, s, rebalanceOrders); err != nil {
				return err
			}
			groups, err := newWorkerGroups(s)
			if err != nil {
				return err
			}
			defer groups.close()
			// The first worker applies its first poll (one message at a time,
			// its first record; in batch mode, the batch) and holds it before
			// the offset commit for fault.PauseFor. Every commit of the first
			// worker pauses, not only its first one: the point is the
			// process's, hit by each topic's reader, and in batch mode
			// order_confirmed's reader, given the confirmation of an order
			// the batch applied already, may reach its commit before
			// order_paid's batch does when applying is slow. With pause:1
			// that pause went to order_confirmed and order_paid committed at
			// once (seen under load: "committed ... while the first worker
			// should hold its records").
			first, err := s.StartWorker(ctx, nil, "--faults", faultBeforeOffsetCommit+"=pause")
			if err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the first worker's order_paid runs", 30*time.Second, func(c Counts) bool {
				return c.ExecOrderPaid >= 1
			}); err != nil {
				return err
			}
			// Each of its members has had the group's first answer: a member
			// killed before it stays in its group on the in-process cluster
			// (kfake), where a real Kafka would expire it.
			if err := groups.waitFor(ctx, "each group formed with the first worker", 15*time.Second, groups.stable(1)); err != nil {
				return err
			}
			if _, err := s.StartWorker(ctx, nil); err != nil {
				return err
			}
			if err := groups.watchRebalanceHeld(ctx); err != nil {
				return err
			}
			s.Logf("group %s: PreparingRebalance for %s with 2 members and no committed offset: the second worker "+
				"waits to join, the first holds its records and does not rejoin", groups.orderPaid, heldFor)
			if err := first.Kill(); err != nil {
				return err
			}
			s.Logf("first worker SIGKILLed with its records applied and their offsets uncommitted")
			// Its members stay in their groups until their session ends
			// (10s); then each rebalance completes without them, and the
			// second worker reads every partition from its last committed
			// offset.
			if err := groups.waitFor(ctx, "the groups without the first worker", 30*time.Second, groups.stable(1)); err != nil {
				return err
			}
			s.Logf("every group Stable with the second worker alone: the partitions moved to it")
			return nil
		},
	}
}

// workerGroups watches the consumer groups of the stage's workers on
// Kafka: one per subscription (consumer.Subscriptions), named as the
// broker names them (broker.KafkaGroup) under the stage's prefix.
type workerGroups struct {
	cl        *kgo.Client
	admin     *kadm.Client
	names     []string
	orderPaid string
}

func newWorkerGroups(s *Stage) (*workerGroups, error) {
	addrs, err := brokerAddrs(s.cfg.Env)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs.KafkaBrokers...), kgo.ClientID("orderpaid-lab scenario group watch"))
	if err != nil {
		return nil, fmt.Errorf("watch the workers' Kafka groups: %w", err)
	}
	g := &workerGroups{cl: cl, admin: kadm.NewClient(cl)}
	for _, sub := range consumer.Subscriptions() {
		name := broker.KafkaGroup(s.brokerPrefix+sub.Topic, sub.Group)
		g.names = append(g.names, name)
		if sub.Topic == messages.TopicOrderPaid {
			g.orderPaid = name
		}
	}
	return g, nil
}

func (g *workerGroups) close() { g.cl.Close() }

// groupCheck says what about the described groups is not yet as wanted
// ("" when all is), or fails when it never will be.
type groupCheck func(context.Context, kadm.DescribedGroups) (notYet string, err error)

// waitFor checks the groups every 200ms until check is satisfied, for up
// to timeout.
func (g *workerGroups) waitFor(ctx context.Context, what string, timeout time.Duration, check groupCheck) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		notYet, err := g.check(ctx, check)
		if err != nil || notYet == "" {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %s", what, notYet)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// check describes the groups once and applies check; a group that cannot
// be described yet is not yet as wanted.
func (g *workerGroups) check(ctx context.Context, check groupCheck) (string, error) {
	described, err := g.admin.DescribeGroups(ctx, g.names...)
	if err != nil {
		return fmt.Sprintf("describe groups: %v", err), nil
	}
	return check(ctx, described)
}

// watchRebalanceHeld waits for the second worker to join order_paid's
// group, then checks for heldFor that the rebalance keeps waiting for the
// first worker (held).
func (g *workerGroups) watchRebalanceHeld(ctx context.Context) error {
	if err := g.waitFor(ctx, "the second worker waiting to join order_paid's group", 15*time.Second, g.held); err != nil {
		return err
	}
	for since := time.Now(); time.Since(since) < heldFor; time.Sleep(200 * time.Millisecond) {
		if notYet, err := g.check(ctx, g.held); err != nil || notYet != "" {
			return fmt.Errorf("the rebalance did not wait for the first worker's records: %s (%v)", notYet, err)
		}
	}
	return nil
}

// stable says whether every group is Stable with members members.
func (g *workerGroups) stable(members int) groupCheck {
	return func(_ context.Context, described kadm.DescribedGroups) (string, error) {
		for _, name := range g.names {
			d := described[name]
			if d.Err != nil || d.State != "Stable" || len(d.Members) != members {
				return fmt.Sprintf("group %s: %s, %d members (%v)", name, d.State, len(d.Members), d.Err), nil
			}
		}
		return "", nil
	}
}

// held says whether order_paid's group waits in a rebalance with two
// members (the second worker joined, the first has not rejoined) and has
// committed no offset (the first worker's records are not committed).
func (g *workerGroups) held(ctx context.Context, described kadm.DescribedGroups) (string, error) {
	d := described[g.orderPaid]
	if d.Err != nil || d.State != "PreparingRebalance" || len(d.Members) != 2 {
		return fmt.Sprintf("group %s: %s, %d members (%v)", g.orderPaid, d.State, len(d.Members), d.Err), nil
	}
	offsets, err := g.admin.FetchOffsets(ctx, g.orderPaid)
	if err != nil {
		return "", fmt.Errorf("fetch the offsets of %s: %w", g.orderPaid, err)
	}
	var committed []string
	offsets.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			committed = append(committed, fmt.Sprintf("%s/%d at %d", o.Topic, o.Partition, o.At))
		}
	})
	if len(committed) > 0 {
		return "", fmt.Errorf("group %s committed %s while the first worker should hold its records", g.orderPaid, strings.Join(committed, ", "))
	}
	return "", nil
}
