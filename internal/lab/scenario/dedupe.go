package scenario

import "context"

// executionDedupe is the classic wrong fix, run as its own scenario: the
// worker skips any message id it has seen (switches.DedupeExecutions), and the
// same transient failure that transient-retry shows being repaired now loses
// the commission for good.
func executionDedupe() *Scenario {
	return &Scenario{
		Name: "execution-dedupe",
		Summary: "the wrong fix: the worker skips message ids it has already seen; order_paid fails after step 1, " +
			"the retry is skipped as a duplicate and acknowledged",
		Repeated: "order_paid retry, skipped as 'seen'",
		PerMessageOnly: "the wrong fix is a middleware of the router's per-message handler; in batch mode order_paid " +
			"is read by the batch loop, which has no such middleware, so there is no wrong fix to show",
		Protected: Expect{
			Damage: "commission LOST: the retry was skipped, the message acked, step 2 never ran",
			Checks: once(1, eq(ExecOrderPaid, 1), eq(Commission, 0)),
		},
		Run: func(ctx context.Context, s *Stage) error {
			_, err := payAndWait(ctx, s, "--dedupe-executions", "--faults", faultAfterMarkPaid+"=error:1")
			return err
		},
	}
}
