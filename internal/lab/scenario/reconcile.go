package scenario

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/ops/reconcile"
)

// The guards protect an effect while the code runs; reconcile is what an
// operator runs afterwards, when nothing is running any more that would
// finish the job: it holds the service's record against the providers' and
// settles what is safe (orderpaid reconcile, internal/ops/reconcile). Each
// scenario leaves a gap no guard closes, shows it with --dry-run, then runs
// reconcile twice at once.

func chargeNeverAnswered() *Scenario {
	return &Scenario{
		Name: "charge-never-answered",
		Summary: "the api is SIGKILLed between the gateway's answer and storing it, the client gives up and the gateway's " +
			"webhook never arrives: the order stays pending, its charge charging; an operator runs reconcile, twice at once",
		Repeated:  "reconcile, twice at once",
		Protected: Expect{Checks: once(1, eq(Recorded, 1), eq(Reconciled, 1))},
		Without: map[string]Expect{
			effect.GuardChargeRecord: {
				Damage: "the charge the gateway made is on no record of the service: the audit counts none, the attempt stays charging",
				Checks: once(1, eq(Recorded, 0), eq(Reconciled, 1)),
			},
		},
		Run: func(ctx context.Context, s *Stage) error {
			// The fakes deliver their webhooks nowhere: the provider's
			// retries all fail, as when the endpoint was down for longer
			// than the provider retries.
			if _, err := s.start(ctx, "fakes", map[string]string{"WEBHOOK_URL": "http://127.0.0.1:1/webhooks/payments"},
				"fakes listening on ", []string{"fakes"}); err != nil {
				return err
			}
			api, err := s.start(ctx, "api", nil, "api listening on ", append(s.guardArgs("api"), "--faults", faultAfterGatewayCall+"=crash:1"))
			if err != nil {
				return err
			}
			if _, err := s.StartWorker(ctx, nil); err != nil {
				return err
			}
			id, err := s.NewOrder(ctx)
			if err != nil {
				return err
			}
			if status, err := s.Pay(ctx, id, "pay-"+id.String(), 10*time.Second); err == nil {
				return fmt.Errorf("the payment answered %d; the api was to die after the gateway's answer", status)
			}
			if err := api.WaitExit(ctx, 10*time.Second); err != nil {
				return err
			}
			s.Logf("the api died between the gateway's answer and storing it; the client gave up")
			if err := s.StartAPI(ctx); err != nil { // back after the crash; no request comes
				return err
			}
			return s.reconcileTwice(ctx)
		},
	}
}

func notificationMissing() *Scenario {
	return &Scenario{
		Name: "notification-missing",
		Summary: "the provider rejects our API key, the confirmation lands in the poison queue and nobody replays it; " +
			"reconcile finds the paid order without its e-mail and sends its one order_confirmed again; then the poison queue is replayed too",
		Repeated: "order_confirmed resent by reconcile, then replayed",
		Protected: Expect{
			Checks: once(1, eq(ProviderCalls, 1)),
		},
		Without: map[string]Expect{
			effect.GuardInbox: {
				Damage: "the replay went past the inbox to the e-mail's claim, which answered already_applied: one more read, no call",
				Checks: once(1, eq(ProviderCalls, 1)),
			},
		},
		Settled: func(c Counts) bool { return c.Notified >= 1 && c.ExecOrderConfirmed >= 3 },
		Run: func(ctx context.Context, s *Stage) error {
			if _, err := s.poisonedConfirmation(ctx); err != nil {
				return err
			}
			if err := s.reconcileTwice(ctx); err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the resent confirmation's e-mail", 30*time.Second, func(c Counts) bool { return c.Notified >= 1 }); err != nil {
				return err
			}
			_, err := s.Command(ctx, "reprocess", "--poison")
			return err
		},
	}
}

// reconcileTwice runs `orderpaid reconcile --dry-run` (it reports the gap
// and exits 1), then two `orderpaid reconcile` at once: each settles what
// it wins, and neither settles anything twice. Each exits 0 (done) or 3
// (settled, the worker has not applied it yet): the worker here applies it
// after them.
func (s *Stage) reconcileTwice(ctx context.Context) error {
	// The gap must have lasted the grace reconcile gives what is in flight.
	select {
	case <-time.After(1100 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	args := append(s.guardArgs("reconcile"), "--grace", "1s")
	if _, err := s.Command(ctx, append(args, "--dry-run")...); err == nil {
		return errors.New("reconcile --dry-run found nothing to settle")
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := s.runReconcile(ctx, args) // settled or not: the worker applies it after the run
			errs <- err
		}()
	}
	return errors.Join(<-errs, <-errs)
}

// Reconcile runs orderpaid reconcile once, as an operator would, once the
// work it holds has been quiet for grace, and reports whether it settled
// something (exit 3: settled, the worker has not applied it yet). A run
// that finds nothing to settle exits 0; any other exit is an error.
func (s *Stage) Reconcile(ctx context.Context, grace time.Duration) (settled bool, err error) {
	select {
	case <-time.After(grace + 100*time.Millisecond):
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return s.runReconcile(ctx, append(s.guardArgs("reconcile"), "--grace", grace.String()))
}

// runReconcile runs `orderpaid reconcile args` once: settled when it exits 3
// (settled, the worker has not applied it yet), an error for any exit but
// 0 and 3.
func (s *Stage) runReconcile(ctx context.Context, args []string) (settled bool, err error) {
	out, err := s.Command(ctx, args...)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == reconcile.ExitWaiting {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("orderpaid reconcile: %w\n%s", err, out)
	}
	return false, nil
}
