package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// A member whose group session failed starts over with a new client.
//
// franz-go rejoins a group by itself after a failed group session (a
// JoinGroup refused, or unanswered within the rebalance timeout plus
// kafkaJoinOverhead: "unable to join group session: ... i/o timeout"),
// with the same member id, for ever. When the coordinator never completes
// the rebalance that member waits in, nothing changes from one attempt to
// the next and the member reads nothing again. franz-go's in-process
// cluster (kfake) does that after repeated SIGKILLs: it sets the
// rebalance's deadline again at every JoinGroup, and a member killed in its
// JoinGroup never expires (docs/kafka.md, "A member that cannot join"), so
// the members still alive, rejoining every 40s with franz-go's defaults,
// kept the dead ones in the group.
//
// Two things answer it. A member waits longer for its JoinGroup
// (kafkaJoinOverhead), so that such a coordinator decides before the member
// gives up. And after a failed session the member leaves the group and
// closes its client, waits, out of the group, until the group is no longer
// PreparingRebalance (at most kafkaRejoinWait: the coordinator then decides
// the rebalance without it), and joins with a new client, hence a new
// member id. What it held was not committed: the partitions' next owners
// read it again. Waiting for a second failed session first was tried: it
// cost 40s more, and the soak's flow took 3 minutes to settle.

// kafkaJoinOverhead is how long past the rebalance timeout a group member
// waits for the answer to its JoinGroup (and to any request: franz-go's
// RequestTimeoutOverhead, 10s by default), 65s in all. A coordinator that
// decides a rebalance a rebalance timeout after its last join, as kfake
// does, then answers a member before it gives up, even when another member
// joined up to 35s after it: with 10s, two members joining 10 to 30s apart
// gave up in turn, each join pushing the deadline past the other's, for
// ever. The price: a connection that hangs without closing is noticed 25s
// later than with franz-go's default.
const kafkaJoinOverhead = kafkaRebalanceTimeout + 5*time.Second

// kafkaRejoinWait bounds the wait out of the group. The other members stuck
// in the same rebalance give up too, the last one up to a JoinGroup's
// timeout later (the rebalance timeout and kafkaJoinOverhead); the
// coordinator decides a rebalance timeout after that last leave: 95s, and
// a margin. Coming back earlier joins the rebalance that is still stuck
// and keeps it so (seen on kfake with 40s).
const kafkaRejoinWait = 2*kafkaRebalanceTimeout + kafkaJoinOverhead + kafkaSessionTimeout

// awaitRebalanceEnd waits until group is no longer PreparingRebalance (or
// is gone), asking four times a second, at most limit or until ctx ends. It is
// called out of the group: the coordinator then finishes the rebalance
// with the members that are there, and removes those that never came back.
func awaitRebalanceEnd(ctx context.Context, admin *kadm.Client, group string, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		described, err := admin.DescribeGroups(ctx, group)
		if err == nil {
			if g, ok := described[group]; !ok || g.Err != nil || g.State != "PreparingRebalance" {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond): // the end may last only until the next join
		}
	}
}
