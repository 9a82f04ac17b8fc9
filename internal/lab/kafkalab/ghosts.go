package kafkalab

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The ghost reaper: what a real Kafka's session timer does, for the
// members kfake forgets to time (groups.go, "A ghost member").
//
// A worker killed while its JoinGroup waits, or while the answer to it is
// on its way, gets no session timer on kfake. When the group then settles
// (another member's SyncGroup makes it Stable), the ghost keeps the
// partitions it was assigned and nobody reads them, for ever: SIGKILLs
// every 3.5s in the soak left order_confirmed Stable with three members for
// two workers, and the soak did not settle. A real Kafka removes such a
// member one session timeout (10s) after it last spoke.
//
// So the cluster notes when each member last sent a JoinGroup, SyncGroup,
// Heartbeat or OffsetCommit, and every ghostCheck it removes, with a
// LeaveGroup naming it (what kfake does when a session times out), every
// member of a Stable group silent for ghostAfter. A live member of a Stable
// group sends a heartbeat every second; a member waiting in JoinGroup is
// silent, but its group is not Stable then.

// ghostAfter is how long a member of a Stable group may be silent: a
// session timeout (internal/platform/broker's kafkaSessionTimeout, 10s) and
// a margin.
const ghostAfter = 15 * time.Second

// ghostCheck is how often the reaper looks.
const ghostCheck = 2 * time.Second

// memberSeen records when each member of each group last spoke.
type memberSeen struct {
	mu   sync.Mutex
	last map[[2]string]time.Time // {group, member id}
}

// watch registers, on c, observers of the requests a live member sends.
// They note the member and let kfake handle the request.
func (s *memberSeen) watch(c *kfake.Cluster) {
	s.last = map[[2]string]time.Time{}
	for _, key := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit} {
		c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			var group, member string
			switch r := req.(type) {
			case *kmsg.JoinGroupRequest:
				group, member = r.Group, r.MemberID
			case *kmsg.SyncGroupRequest:
				group, member = r.Group, r.MemberID
			case *kmsg.HeartbeatRequest:
				group, member = r.Group, r.MemberID
			case *kmsg.OffsetCommitRequest:
				group, member = r.Group, r.MemberID
			}
			if member != "" {
				s.mu.Lock()
				s.last[[2]string{group, member}] = time.Now()
				s.mu.Unlock()
			}
			return nil, nil, false
		})
	}
}

// silent reports whether member of group has not spoken for d. A member
// never seen is not silent: it joined before the watch began.
func (s *memberSeen) silent(group, member string, d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.last[[2]string{group, member}]
	return ok && time.Since(last) > d
}

// reapGhosts removes the ghosts of the cluster at addrs every ghostCheck
// until ctx ends.
func reapGhosts(ctx context.Context, addrs []string, seen *memberSeen) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ClientID("orderpaid lab ghost reaper"))
	if err != nil {
		return
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(ghostCheck):
		}
		reapOnce(ctx, cl, admin, seen)
	}
}

// reapOnce removes every member of a Stable group silent for ghostAfter.
func reapOnce(ctx context.Context, cl *kgo.Client, admin *kadm.Client, seen *memberSeen) {
	listed, err := admin.ListGroups(ctx)
	if err != nil {
		return
	}
	described, err := admin.DescribeGroups(ctx, listed.Groups()...)
	if err != nil {
		return
	}
	for _, g := range described {
		if g.Err != nil || g.State != "Stable" {
			continue
		}
		for _, m := range g.Members {
			if !seen.silent(g.Group, m.MemberID, ghostAfter) {
				continue
			}
			leave := kmsg.NewPtrLeaveGroupRequest()
			leave.Group = g.Group
			member := kmsg.NewLeaveGroupRequestMember()
			member.MemberID = m.MemberID
			member.Reason = kmsg.StringPtr("orderpaid lab: silent for a session, a ghost kfake did not time out")
			leave.Members = append(leave.Members, member)
			_, _ = leave.RequestWith(ctx, cl)
		}
	}
}
