package scenario

import (
	"context"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// The consumers' own repetitions: an in-process retry, a lost ack, a broker
// redelivery, a crash between two effects.

func transientRetry() *Scenario {
	return &Scenario{
		Name:      "transient-retry",
		Summary:   "order_paid fails with a transient error after step 1 and the router retries it in-process",
		Repeated:  "order_paid retried after step 1",
		Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 2), eq(ExecOrderConfirmed, 1))},
		Without: map[string]Expect{
			effect.GuardStateCheck: doubleTransition(2, 2, eq(ExecOrderPaid, 2), eq(ExecOrderConfirmed, 2)),
		},
		Run: func(ctx context.Context, s *Stage) error {
			_, err := payAndWait(ctx, s, "--faults", faultAfterMarkPaid+"=error:1")
			return err
		},
	}
}

func commitNoAck() *Scenario {
	return &Scenario{
		Name:      "commit-no-ack",
		Summary:   "order_paid commits every effect, then times out before the ack: the whole message runs again",
		Repeated:  "order_paid after its commit",
		Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 2), eq(ExecOrderConfirmed, 1))},
		Without: map[string]Expect{
			effect.GuardStateCheck: doubleTransition(2, 2, eq(ExecOrderPaid, 2), eq(ExecOrderConfirmed, 2)),
		},
		Run: func(ctx context.Context, s *Stage) error {
			_, err := payAndWait(ctx, s, "--faults", faultBeforeAck+"=error:1")
			return err
		},
	}
}

func brokerRedelivery() *Scenario {
	return &Scenario{
		Name: "broker-redelivery",
		Summary: "order_confirmed fails after the provider sent the e-mail, six times: the in-process retries give up, " +
			"the message goes back to the broker, which delivers it again",
		Repeated: "order_confirmed x7 (6 failed)",
		// The e-mail's claim was settled before the failure: the six runs
		// after it find it sent and call no one.
		Protected: Expect{Checks: once(1, eq(ExecOrderConfirmed, 7), eq(ProviderCalls, 1))},
		Without: map[string]Expect{
			effect.GuardNotificationClaim: {
				Damage: "the provider was called on all seven runs; only its key, a memory of about a day, kept them to one e-mail",
				Checks: once(1, eq(ExecOrderConfirmed, 7), eq(ProviderCalls, 7)),
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderConfirmed >= 7 },
		Run: func(ctx context.Context, s *Stage) error {
			_, err := payAndWait(ctx, s, "--faults", faultAfterProviderCall+"=error:6")
			return err
		},
	}
}

func partialFailure() *Scenario {
	return &Scenario{
		Name: "partial-failure",
		Summary: "the worker process crashes between step 1 (order paid, confirmation in the outbox) and step 2 " +
			"(commission); restarted, it gets the message again and completes it",
		Repeated: "order_paid after a crash between 2 effects",
		// The crashed run never reached the execution log: executions show 1.
		Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 1))},
		Without: map[string]Expect{
			effect.GuardStateCheck: doubleTransition(2, 2, eq(ExecOrderPaid, 1), eq(ExecOrderConfirmed, 2)),
			effect.GuardOutbox: {
				Damage: "confirmation lost: the order is paid and no e-mail will ever be sent",
				Checks: once(1, eq(Enqueued, 0), eq(Delivered, 0), eq(Notified, 0), eq(ExecOrderConfirmed, 0)),
			},
		},
		WithEffects: &Difference{
			Why: "the crash takes step 1 with it (the batch's transaction never commits), so the redelivery is the " +
				"first attempt that counts: without the state check nothing transitions twice, and without the outbox " +
				"the redelivery publishes the confirmation. The outbox is still needed: in this mode its mistake " +
				"publishes before the commit, and a crash after the publish confirms a payment that never committed",
			Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 1))},
			Without: map[string]Expect{
				effect.GuardStateCheck: {Checks: once(1, eq(ExecOrderPaid, 1)),
					Note: "no damage without the state check: the crashed attempt left nothing to repeat"},
				effect.GuardOutbox: {Checks: once(1, eq(Enqueued, 0), eq(ExecOrderPaid, 1)),
					Note: "no damage without the outbox at this crash point: the redelivery published the confirmation"},
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 1 },
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.StartFakes(ctx); err != nil {
				return err
			}
			if err := s.StartAPI(ctx); err != nil {
				return err
			}
			w, err := s.StartWorker(ctx, nil, "--faults", faultAfterMarkPaid+"=crash:1")
			if err != nil {
				return err
			}
			if _, _, err := s.PaidOrder(ctx); err != nil {
				return err
			}
			if err := s.waitCrashed(ctx, w); err != nil {
				return err
			}
			s.Logf("worker crashed between the two steps (exit 137); restarting it")
			_, err = s.StartWorker(ctx, nil)
			return err
		},
	}
}
