package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
)

// Processes repeat work when they die, stop or race: a worker SIGKILLed in
// the middle of a batch, a consumer stopped for a deploy, two workers on one
// message.

const restartOrders = 6

func workerRestart() *Scenario {
	return &Scenario{
		Name: "worker-restart",
		Summary: "a worker process is SIGKILLed while it sends the confirmations of a batch of orders, " +
			"one e-mail in flight; a new worker gets the unacknowledged batch again",
		Repeated:  "worker SIGKILLed mid-batch, batch redelivered",
		Orders:    restartOrders,
		Protected: Expect{Checks: once(restartOrders, atLeast(ExecOrderConfirmed, restartOrders))},
		// No one guard off shows damage here: the e-mail in flight at the
		// kill is answered by its claim (the provider asked first) and by
		// the provider's key, each alone. kafka-exactly-once-is-not-enough
		// shows the key's damage, email-replayed-late the claim's.
		WithEffects: &Difference{
			Why: "the kill takes the batch's inbox rows with its transaction: every e-mail the killed batch had sent " +
				"comes to the consumer again, and each finds its claim settled (or asks the provider) and is not sent again",
			Protected: Expect{Checks: once(restartOrders, atLeast(ExecOrderConfirmed, restartOrders))},
		},
		Settled: func(c Counts) bool { return c.Delivered >= restartOrders },
		Run: func(ctx context.Context, s *Stage) error {
			w, err := slowConfirmations(ctx, s, 400, nil)
			if err != nil {
				return err
			}
			// The provider records an e-mail, then takes 400ms to answer:
			// right after the second one shows up, the worker is waiting for
			// that answer, its inbox row not yet written.
			if _, err := s.WaitFor(ctx, "two e-mails sent", 30*time.Second, func(c Counts) bool { return c.Notified >= 2 }); err != nil {
				return err
			}
			if err := w.Kill(); err != nil {
				return err
			}
			s.Logf("worker SIGKILLed with an e-mail in flight")
			if err := s.NotifierControl(ctx, map[string]int{}); err != nil {
				return err
			}
			_, err = s.StartWorker(ctx, nil)
			return err
		},
	}
}

func gracefulRestart() *Scenario {
	return &Scenario{
		Name: "graceful-restart",
		Summary: "a worker gets SIGTERM (a deploy) while an e-mail is in flight at a provider slower than the " +
			"shutdown timeout: the drain gives up, the call is cancelled, and the new worker gets that message again",
		Repeated:  "SIGTERM past the drain, in-flight message redelivered",
		Orders:    restartOrders,
		Protected: Expect{Checks: once(restartOrders, atLeast(ExecOrderConfirmed, restartOrders))},
		Settled:   func(c Counts) bool { return c.Delivered >= restartOrders },
		Run: func(ctx context.Context, s *Stage) error {
			// A stop lets the message in hand finish for 3/4 of
			// SHUTDOWN_TIMEOUT (broker.NewDraining): 375ms here,
			// against a provider that answers after 3s, so even a SIGTERM
			// delivered late on a busy machine stops the call in flight.
			w, err := slowConfirmations(ctx, s, 3000, map[string]string{"SHUTDOWN_TIMEOUT": "500ms"})
			if err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "two e-mails sent", 30*time.Second, func(c Counts) bool { return c.Notified >= 2 }); err != nil {
				return err
			}
			if err := w.Terminate(10 * time.Second); err != nil {
				return err
			}
			if code := w.ExitCode(); code != 0 {
				return fmt.Errorf("worker exited with %d after SIGTERM, want a clean 0; see %s", code, w.LogPath())
			}
			s.Logf("worker stopped gracefully")
			if err := s.NotifierControl(ctx, map[string]int{}); err != nil {
				return err
			}
			_, err = s.StartWorker(ctx, nil)
			return err
		},
	}
}

// slowConfirmations starts the three processes (the worker with env added),
// makes the provider answer after delayMS, and pays restartOrders orders. It
// returns the worker.
func slowConfirmations(ctx context.Context, s *Stage, delayMS int, workerEnv map[string]string) (*childproc.Proc, error) {
	if err := s.StartFakes(ctx); err != nil {
		return nil, err
	}
	if err := s.StartAPI(ctx); err != nil {
		return nil, err
	}
	w, err := s.StartWorker(ctx, workerEnv)
	if err != nil {
		return nil, err
	}
	if err := s.NotifierControl(ctx, map[string]int{"delay_ms": delayMS}); err != nil {
		return nil, err
	}
	for range restartOrders {
		if _, _, err := s.PaidOrder(ctx); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func twoWorkers() *Scenario {
	return &Scenario{
		Name: "two-workers",
		Summary: "two worker processes run the same order_confirmed at the same moment: the first one's lease on the " +
			"message expires while it waits for a slow provider, and the broker hands the message to the second",
		Repeated: "order_confirmed in 2 workers at once",
		Broker:   "postgres",
		// What the fault needs: a broker that hands a message to a second
		// worker while the first still runs it, once a lease expires.
		BrokerReason: "its fault is a delivery lease expiring under a slow handler; RabbitMQ keeps a message with its consumer until " +
			"it acks or disconnects, and NATS redelivers after an AckWait of 30s, longer than the worker's 10s wait for the provider",
		// Both workers pass the inbox check before either writes it; the
		// second finds the e-mail's claim held by the first ("not now"),
		// waits, and then finds it sent: one call. (The provider's key alone
		// would stop the second e-mail too; no one guard off shows damage.)
		Protected: Expect{Checks: once(1, atLeast(ExecOrderConfirmed, 2), eq(ProviderCalls, 1))},
		Settled:   func(c Counts) bool { return c.ExecOrderConfirmed >= 2 },
		WithEffects: &Difference{
			Why: "the expired lease is the batch's transaction, and it takes the first worker's run with it " +
				"(inbox row, log and all), but not its e-mail's claim, which the second worker finds held, then sent",
			Protected: Expect{Checks: once(1, atLeast(ExecOrderConfirmed, 1), eq(ProviderCalls, 1)),
				Note: "each effect once: the first worker's run was rolled back with its lease, its e-mail's claim was not"},
			Settled: func(c Counts) bool { return c.ExecOrderConfirmed >= 1 && c.Notified >= 1 },
		},
		Run: func(ctx context.Context, s *Stage) error {
			// With the postgres broker a delivery is leased by the
			// subscriber's transaction. A session idle in that transaction
			// for more than 1s is ended by the server, the lease with it:
			// the same thing as an SQS visibility timeout or a NATS AckWait
			// expiring under a slow handler.
			if err := tempdb.SetParameter(ctx, s.cfg.AdminURL, s.dbName, "idle_in_transaction_session_timeout", "1s"); err != nil {
				return err
			}
			if err := s.StartFakes(ctx); err != nil {
				return err
			}
			if err := s.StartAPI(ctx); err != nil {
				return err
			}
			for range 2 {
				if _, err := s.StartWorker(ctx, nil); err != nil {
					return err
				}
			}
			if err := s.NotifierControl(ctx, map[string]int{"delay_ms": 2500}); err != nil {
				return err
			}
			if _, _, err := s.PaidOrder(ctx); err != nil {
				return err
			}
			// The first worker's call is out and slow; the provider is fast
			// again for the second worker, which gets the message once the
			// first one's lease ends.
			if _, err := s.WaitFor(ctx, "first e-mail sent", 30*time.Second, func(c Counts) bool { return c.Notified >= 1 }); err != nil {
				return err
			}
			return s.NotifierControl(ctx, map[string]int{})
		},
	}
}
