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
	protected, without, settled := readAgainFromLastCommit(offsetLostOrders)
	return &Scenario{
		Name: "offset-commit-lost",
		Summary: "on Kafka, the worker is killed after order_paid's effects committed and were acked, before the " +
			"offset commit: the group's next member reads again from the last committed offset, the whole batch in batch mode",
		Repeated: "order_paid records after the last committed offset",
		Orders:   offsetLostOrders,
		Broker:   config.BrokerKafka,
		BrokerReason: "the position it loses is a Kafka offset; on the other brokers the same gap is commit-no-ack " +
			"(an ack never sent) and worker-restart",
		Protected:   protected,
		Without:     without,
		Settled:     settled,
		WithEffects: nothingReadAgain(offsetLostOrders),
		Run: func(ctx context.Context, s *Stage) error {
			if err := ordersWaiting(ctx, s, offsetLostOrders); err != nil {
				return err
			}
			faults := faultBeforeOffsetCommit + "=crash:1"
			if s.cfg.Env["CONSUMER_POSITION"] == config.PositionWithEffects {
				// The first batch waits after its state check (pause:1, for
				// fault.PauseFor): the relay, in the same process, has by
				// then published and acked every order's message, so the
				// next worker's relay sends nothing again. A message sent
				// again is a new record, read for the first time: not the
				// repeat this scenario shows, and with the position in the
				// effects' transaction it made the count of executions
				// depend on the relay's timing (7 of 4 in one CI run).
				faults += "," + faultAfterMarkPaid + "=pause:1"
			}
			w, err := s.StartWorker(ctx, nil, "--faults", faults)
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

// readAgainFromLastCommit is what a run shows when some of the order_paid
// records of n orders are read again from the group's last committed
// offset: with the guards on, every effect once and more than n executions;
// without the state check, each order read again transitions again.
// settled waits for the records read again and every confirmation.
func readAgainFromLastCommit(n int) (protected Expect, without map[string]Expect, settled func(Counts) bool) {
	protected = Expect{Checks: once(n, atLeast(ExecOrderPaid, n+1))}
	without = map[string]Expect{
		effect.GuardStateCheck: {
			Damage: "the orders read again transitioned again and enqueued their confirmation again (the consumer inbox absorbed it)",
			Checks: once(n, atLeast(Paid, n+1), atLeast(Enqueued, n+1), atLeast(ExecOrderPaid, n+1)),
		},
	}
	// Every confirmation delivered, not only run n times: a confirmation read
	// again counts as a run too, and one run settled with 12 runs of
	// order_confirmed and an order's e-mail still on a partition the dead
	// member held.
	settled = func(c Counts) bool { return c.ExecOrderPaid > int64(n) && c.Delivered >= int64(n) }
	return protected, without, settled
}

// nothingReadAgain is what the same run shows with the group's position in
// the effects' transaction (CONSUMER_POSITION=with-effects: the rows of
// kafka_positions): the position moved with the effects, the next member
// seeks to it, and nothing is read again.
func nothingReadAgain(n int) *Difference {
	return &Difference{
		Why: "the position committed with the effects, in PostgreSQL: the next member seeks to it and reads nothing again; " +
			"only the offset in Kafka, kept for its tools, was left behind",
		Protected: Expect{Checks: once(n, eq(ExecOrderPaid, n)),
			Note: "each effect once, and one execution per order: nothing was read again"},
		Without: map[string]Expect{
			effect.GuardStateCheck: {Checks: once(n, eq(ExecOrderPaid, n)),
				Note: "no damage without the state check: nothing was read again"},
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= int64(n) && c.ExecOrderConfirmed >= int64(n) },
	}
}

// ordersWaiting starts the fakes and the api and pays n orders with no
// worker running: their order_paid messages wait in the outbox, and the
// first worker's relay publishes them together, so its consumer reads them
// in one poll (one batch in batch mode).
func ordersWaiting(ctx context.Context, s *Stage, n int) error {
	if err := s.StartFakes(ctx); err != nil {
		return err
	}
	if err := s.StartAPI(ctx); err != nil {
		return err
	}
	for range n {
		if _, _, err := s.PaidOrder(ctx); err != nil {
			return err
		}
	}
	return nil
}
