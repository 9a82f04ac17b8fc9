package scenario

import (
	"context"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Kafka's own repetition: a group's position is the offset it committed,
// and a consumer commits after its handler (at least once). What a member
// handled and did not commit is read again by the next owner of its
// partition, from the last commit on: one record per message, the whole
// batch in batch mode.

const offsetLostOrders = 4

func offsetCommitLost() *Scenario {
	return &Scenario{
		Name: "offset-commit-lost",
		Summary: "on Kafka, the worker is killed after order_paid's effects committed and were acked, before the " +
			"offset commit: the group's next member reads again from the last committed offset, the whole batch in batch mode",
		Repeated: "order_paid records after the last committed offset",
		Orders:   offsetLostOrders,
		Broker:   config.BrokerKafka,
		BrokerReason: "the position it loses is a Kafka offset; on the other brokers the same gap is commit-no-ack " +
			"(an ack never sent) and worker-restart",
		Protected: Expect{Checks: once(offsetLostOrders, atLeast(ExecOrderPaid, offsetLostOrders+1))},
		Without: map[string]Expect{
			effect.GuardStateCheck: {
				Damage: "the orders read again transitioned again and enqueued their confirmation again (the consumer inbox absorbed it)",
				Checks: once(offsetLostOrders, atLeast(Paid, offsetLostOrders+1), atLeast(Enqueued, offsetLostOrders+1),
					atLeast(ExecOrderPaid, offsetLostOrders+1)),
			},
		},
		Settled: func(c Counts) bool {
			return c.ExecOrderPaid > offsetLostOrders && c.ExecOrderConfirmed >= offsetLostOrders
		},
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.StartFakes(ctx); err != nil {
				return err
			}
			if err := s.StartAPI(ctx); err != nil {
				return err
			}
			// The orders are paid with no worker running: their order_paid
			// messages wait in the outbox, and the worker's relay publishes
			// them together, so its consumer reads them in one poll (one
			// batch in batch mode).
			for range offsetLostOrders {
				if _, _, err := s.PaidOrder(ctx); err != nil {
					return err
				}
			}
			w, err := s.StartWorker(ctx, nil, "--faults", faultBeforeOffsetCommit+"=crash:1")
			if err != nil {
				return err
			}
			if err := s.waitCrashed(ctx, w); err != nil {
				return err
			}
			s.Logf("worker crashed after the ack, before the offset commit (exit 137); restarting it")
			// The dead member keeps its partitions until the group gives up
			// on it (a session of 10s); then the new one reads them from the
			// last committed offset.
			_, err = s.StartWorker(ctx, nil)
			return err
		},
	}
}
