package broker_test

import (
	"testing"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// A message the group's durable delivered and no member acked counts in
// the NATS backlog: a member that dies holding it leaves it on the server,
// where only a worker on nats will take it again after AckWait. It kills
// the mutant of NATSBacklog that counts only info.NumPending (what was not
// delivered yet): delivered and held, the message is in NumAckPending
// alone, and the mutant counts 0.
func TestNATSBacklogCountsADeliveredMessageNotAcked(t *testing.T) {
	t.Parallel()
	const group = "worker"
	bb := setup(t, config.BrokerNATS, group)
	bb.provision(t, group)
	bb.publish(t, 1)
	_, ch := bb.subscribe(t, t.Context(), group)
	held := receive(t, ch) // delivered, never acked
	defer held.Nack()

	backlog, err := broker.NATSBacklog(t.Context(), natsURL(), "", map[string]string{bb.topic: group})
	if err != nil {
		t.Fatal(err)
	}
	if info := natsConsumer(t, bb.topic, group); info.NumPending != 0 || info.NumAckPending != 1 {
		t.Fatalf("the durable has %d not delivered and %d ack pending, want 0 and 1", info.NumPending, info.NumAckPending)
	}
	if got := backlog[bb.topic]; got != 1 {
		t.Errorf("1 message delivered and not acked: backlog %d, want 1", got)
	}
}
