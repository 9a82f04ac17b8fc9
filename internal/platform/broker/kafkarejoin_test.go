package broker_test

import (
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
)

// A member whose joins keep failing starts over with a new client
// (kafkarejoin.go). The coordinator here refuses every JoinGroup of the
// first member id it hands out, as kfake stuck in a rebalance never answers
// one: franz-go alone would rejoin with that id for ever and the message
// would never come. It must come, to a member with another id.
func TestKafkaMemberWhoseJoinsFailStartsOver(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("start an in-process Kafka cluster: %v", err)
	}
	t.Cleanup(c.Close)
	bb := kafkaSetup(t, c.ListenAddrs(), "")
	bb.provision(t, "worker")
	group := broker.KafkaGroup(bb.topic, "worker")

	var mu sync.Mutex
	var stuck string // the member id whose joins are refused
	var refused int
	members := map[string]bool{}
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		join := req.(*kmsg.JoinGroupRequest)
		if join.Group != group || join.MemberID == "" {
			return nil, nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		members[join.MemberID] = true
		if stuck == "" {
			stuck = join.MemberID
		}
		if join.MemberID != stuck {
			return nil, nil, false
		}
		refused++
		resp := join.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil, true
	})

	sent := bb.publishFor(t, watermill.NewUUID())
	_, ch := bb.subscribe(t, t.Context(), "worker")
	m := receiveWithin(t, ch, 30*time.Second)
	m.Ack()
	if m.UUID != sent[0].UUID {
		t.Errorf("received %s, want %s", m.UUID, sent[0].UUID)
	}
	mu.Lock()
	defer mu.Unlock()
	if refused < 1 || len(members) < 2 {
		t.Errorf("%d joins refused, %d member ids: want the stuck member refused, then a new member", refused, len(members))
	}
	t.Logf("%d joins of member %s refused; member ids used: %d", refused, stuck, len(members))
}
