package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/netfault"
)

// The network's repetitions: a timeout that leaves partial state, the other
// side acted and only its answer was lost.

func commitAckLost() *Scenario {
	return &Scenario{
		Name: "commit-ack-lost",
		Summary: "PostgreSQL commits order_paid's step 1, but the worker's connection breaks before the COMMIT " +
			"acknowledgement reaches it: the worker sees an error for a durable commit and runs the message again",
		Repeated:  "order_paid after a commit it never heard of",
		Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 2), eq(ExecOrderConfirmed, 1))},
		Without: map[string]Expect{
			effect.GuardStateCheck: doubleTransition(2, 2, eq(ExecOrderPaid, 2), eq(ExecOrderConfirmed, 2)),
		},
		WithEffects: &Difference{
			Why: "the lost COMMIT is the batch's own, and the position was in it: the worker never heard of it, " +
				"but reads on from where the position is, past the message, so nothing runs again",
			Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 1), eq(ExecOrderConfirmed, 1)),
				Note: "each effect once, and one execution: the unheard-of commit moved the position too"},
			Without: map[string]Expect{
				effect.GuardStateCheck: {Checks: once(1, eq(ExecOrderPaid, 1), eq(ExecOrderConfirmed, 1)),
					Note: "no damage without the state check: nothing repeated"},
			},
		},
		Run: func(ctx context.Context, s *Stage) error {
			// The worker reaches the database through a proxy that reads
			// PostgreSQL's messages and closes the connection in place of the
			// "COMMIT" answer of the first transaction that updated one row:
			// the order's move to paid (internal/lab/netfault).
			upstream, err := netfault.Upstream(s.dbURL)
			if err != nil {
				return err
			}
			proxy, err := netfault.Start("postgres", upstream)
			if err != nil {
				return err
			}
			s.onClose(proxy.Close)
			cut, err := proxy.LoseCommitAck("UPDATE 1", 1)
			if err != nil {
				return err
			}
			workerURL, err := netfault.Via(s.dbURL, proxy.Addr())
			if err != nil {
				return err
			}
			if err := s.StartFakes(ctx); err != nil {
				return err
			}
			if err := s.StartAPI(ctx); err != nil {
				return err
			}
			if _, err := s.StartWorker(ctx, map[string]string{"DATABASE_URL": workerURL}); err != nil {
				return err
			}
			if _, _, err := s.PaidOrder(ctx); err != nil {
				return err
			}
			_, err = s.WaitFor(ctx, "the first order_confirmed handled", 30*time.Second, func(c Counts) bool {
				return c.ExecOrderConfirmed >= 1
			})
			if err == nil && cut.Cuts() != 1 {
				err = fmt.Errorf("the proxy cut %d commit acknowledgements, want 1: the fault did not happen", cut.Cuts())
			}
			s.Logf("commit acknowledgements lost: %d", cut.Cuts())
			return err
		},
	}
}
