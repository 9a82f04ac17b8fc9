package scenario

import (
	"context"
	"time"
)

// Catalogue returns every scenario, in the order of docs/scenarios.md: the
// public edge first, then the broker and the consumers, then processes, then
// the operator's tools, and last the wrong fix.
func Catalogue() []*Scenario {
	return []*Scenario{
		clientRetry(),
		newKeyPerRetry(),
		gatewayForgotKey(),
		chargeAnswerLost(),
		chargeSentBlind(),
		webhookRedelivered(),
		webhookConcurrent(),
		twoEvents(),
		stockRedelivered(),
		lastUnitRaced(),
		shortOrderRefunded(),
		refundRedelivered(),
		refundBeforePayment(),
		paymentAfterRefund(),
		refundRefused(),
		transientRetry(),
		commitNoAck(),
		commitAckLost(),
		brokerRedelivery(),
		partialFailure(),
		offsetCommitLost(),
		rebalanceMidBatch(),
		kafkaExactlyOnceIsNotEnough(),
		cdcRelayRestart(),
		cdcSlotStalled(),
		relayOrder(),
		workerRestart(),
		gracefulRestart(),
		twoWorkers(),
		jobReenqueued(),
		reprocessOperator(),
		emailReplayedLate(),
		backfillTwice(),
		backfillRefunded(),
		chargeNeverAnswered(),
		notificationMissing(),
		executionDedupe(),
	}
}

// Fault points, as internal/consumer names them (consumer.FaultAfterMarkPaid, ...).
const (
	faultAfterMarkPaid     = "order_paid.after_mark_paid"
	faultBeforeAck         = "order_paid.before_ack"
	faultAfterProviderCall = "order_confirmed.after_provider_call"
	// faultBeforeOffsetCommit is broker.FaultBeforeOffsetCommit.
	faultBeforeOffsetCommit = "kafka.before_offset_commit"
)

// payAndWait is the start of most scenarios: the usual three processes
// (worker with workerArgs), one paid order, and its flow run to the end.
func payAndWait(ctx context.Context, s *Stage, workerArgs ...string) (charge string, err error) {
	if err := s.Start(ctx, workerArgs...); err != nil {
		return "", err
	}
	if _, charge, err = s.PaidOrder(ctx); err != nil {
		return "", err
	}
	_, err = s.WaitFor(ctx, "the first order_confirmed handled", 30*time.Second, func(c Counts) bool {
		return c.ExecOrderConfirmed >= 1
	})
	return charge, err
}

// doubleTransition is the damage of a missing state check: executions
// "transition" the order again and write its confirmation again (the
// order_confirmed inbox then absorbs the copies). paid and enqueued are the
// counts expected.
func doubleTransition(paid, enqueued int, extra ...Check) Expect {
	return Expect{
		Damage: "the order transitioned again and enqueued its confirmation again (the consumer inbox absorbed it)",
		Checks: once(1, append([]Check{eq(Paid, paid), eq(Enqueued, enqueued)}, extra...)...),
	}
}
