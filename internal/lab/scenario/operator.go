package scenario

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
)

// The operator repeats work on purpose: re-enqueues a job, replays an order
// or the poison queue, runs a backfill again. Each runs the real command,
// as a process of its own.

func jobReenqueued() *Scenario {
	return &Scenario{
		Name: "job-reenqueued",
		Summary: "after the flow finished, both of the order's jobs (order_paid and order_confirmed) are re-enqueued " +
			"with their original message ids (orderpaid reprocess --message)",
		Repeated: "both jobs re-enqueued, same ids",
		Protected: Expect{
			Checks: once(1, eq(ExecOrderPaid, 2), eq(ExecOrderConfirmed, 2), eq(ProviderCalls, 1)),
		},
		Without: map[string]Expect{
			effect.GuardInbox: {
				Damage: "the second run went past the inbox to the e-mail's claim, which answered already_applied: " +
					"one more read, no call (without the claim too, only the provider's key would stop a second e-mail)",
				Checks: once(1, eq(ExecOrderConfirmed, 2), eq(ProviderCalls, 1)),
			},
			effect.GuardStateCheck: doubleTransition(2, 2, eq(ExecOrderPaid, 2), eq(ExecOrderConfirmed, 3)),
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 2 && c.ExecOrderConfirmed >= 2 },
		Run: func(ctx context.Context, s *Stage) error {
			if _, err := payAndWait(ctx, s); err != nil {
				return err
			}
			msgs, err := labqueries.New(s.pool).ScenarioOutboxMessages(ctx, s.orders[0])
			if err != nil {
				return fmt.Errorf("find the order's messages in the outbox: %w", err)
			}
			seen := map[string]bool{}
			for _, m := range msgs {
				if seen[m.Topic] {
					continue
				}
				seen[m.Topic] = true
				if _, err := s.Command(ctx, "reprocess", "--message", m.MessageID); err != nil {
					return err
				}
			}
			if len(seen) != 2 {
				return fmt.Errorf("found messages for %d topics in the outbox, want order_paid and order_confirmed", len(seen))
			}
			return nil
		},
	}
}

func reprocessOperator() *Scenario {
	return &Scenario{
		Name: "reprocess",
		Summary: "the provider rejects our API key, the confirmation lands in the poison queue; the operator fixes the " +
			"key and replays the poison queue, then replays the whole order, each with --dry-run first",
		Repeated: "operator replays poison queue + order",
		Protected: Expect{
			Checks: once(1, eq(ExecOrderPaid, 2), eq(ExecOrderConfirmed, 2)),
		},
		Without: map[string]Expect{
			effect.GuardLedgerKey: {
				Damage: "double commission: the replayed order_paid is a new message, keyed as a new delivery",
				Checks: once(1, eq(ExecOrderPaid, 2), eq(Commission, 2)),
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 2 && c.Delivered >= 1 },
		Run: func(ctx context.Context, s *Stage) error {
			id, err := s.poisonedConfirmation(ctx)
			if err != nil {
				return err
			}
			for _, args := range [][]string{
				{"reprocess", "--poison", "--dry-run"}, {"reprocess", "--poison"},
				{"reprocess", "--order", id.String(), "--dry-run"}, {"reprocess", "--order", id.String()},
				{"reprocess", "--poison"}, // nothing left: a second run replays nothing
			} {
				if _, err := s.Command(ctx, args...); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// poisonedConfirmation pays an order while the provider rejects our API
// key, waits for its confirmation to land in the poison queue, then
// replaces the worker with one that reaches the real provider: the start of
// an operator's repair.
func (s *Stage) poisonedConfirmation(ctx context.Context) (uuid.UUID, error) {
	rejecting, err := s.rejectingProvider()
	if err != nil {
		return uuid.Nil, err
	}
	if err := s.StartFakes(ctx); err != nil {
		return uuid.Nil, err
	}
	if err := s.StartAPI(ctx); err != nil {
		return uuid.Nil, err
	}
	w, err := s.StartWorker(ctx, map[string]string{"FAKES_URL": rejecting})
	if err != nil {
		return uuid.Nil, err
	}
	id, _, err := s.PaidOrder(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	if err := s.waitPoisoned(ctx); err != nil {
		return uuid.Nil, err
	}
	if err := w.Terminate(10 * time.Second); err != nil {
		return uuid.Nil, err
	}
	_, err = s.StartWorker(ctx, nil)
	return id, err
}

// rejectingProvider serves a notification provider that refuses every call
// with 401, as a real one does after its API key was rotated, and returns
// its URL. It stops when the stage closes.
func (s *Stage) rejectingProvider() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen for the rejecting provider: %w", err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"title":"invalid API key","status":401}`)
	})}
	go func() { _ = srv.Serve(ln) }()
	s.onClose(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), nil
}

func (s *Stage) waitPoisoned(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n, err := s.q.PoisonCountPending(ctx)
		if err != nil {
			return fmt.Errorf("count the poison queue: %w", err)
		}
		if n > 0 {
			s.Logf("%d message(s) in the poison queue", n)
			return nil
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("nothing reached the poison queue within 30s")
}

const backfillOrders = 3

func backfillTwice() *Scenario {
	return &Scenario{
		Name:     "backfill-twice",
		Summary:  "an operator runs the same backfill of order_paid twice over orders that were handled long ago",
		Repeated: "backfill run twice over 3 orders",
		Orders:   backfillOrders,
		Protected: Expect{Checks: once(backfillOrders,
			eq(ExecOrderPaid, 3*backfillOrders), eq(ExecOrderConfirmed, backfillOrders))},
		Without: map[string]Expect{
			effect.GuardLedgerKey: {
				Damage: "double commission: the backfill's message is keyed as a new delivery (the second run repeats the first one's ids)",
				Checks: once(backfillOrders, eq(ExecOrderPaid, 3*backfillOrders), eq(Commission, 2*backfillOrders)),
			},
			effect.GuardStateCheck: {
				Damage: "every order transitioned three times, three confirmations each",
				Checks: once(backfillOrders, eq(ExecOrderPaid, 3*backfillOrders),
					eq(Paid, 3*backfillOrders), eq(Enqueued, 3*backfillOrders)),
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderPaid >= 3*backfillOrders },
		Run: func(ctx context.Context, s *Stage) error {
			from := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
			if err := s.Start(ctx); err != nil {
				return err
			}
			for range backfillOrders {
				if _, _, err := s.PaidOrder(ctx); err != nil {
					return err
				}
			}
			if _, err := s.WaitFor(ctx, "every order handled", 30*time.Second, func(c Counts) bool {
				return c.ExecOrderConfirmed >= backfillOrders
			}); err != nil {
				return err
			}
			for range 2 {
				if _, err := s.Command(ctx, "backfill", "--from", from); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func emailReplayedLate() *Scenario {
	return &Scenario{
		Name: "email-replayed-late",
		Summary: "the order's confirmation is replayed (orderpaid reprocess --message) after the consumer inbox's rows " +
			"of it were cleaned and the provider forgot its keys: a replay later than both memories",
		Repeated:  "order_confirmed replayed past the inbox's window and the provider's key memory",
		Protected: Expect{Checks: once(1, eq(ExecOrderConfirmed, 2))},
		Without: map[string]Expect{
			effect.GuardNotificationClaim: {
				Damage: "a second e-mail: the message's inbox row and the provider's key were gone, and nothing " +
					"remembered that the order's e-mail was sent",
				Checks: once(1, eq(ExecOrderConfirmed, 2), eq(Notified, 2)),
			},
		},
		Settled: func(c Counts) bool { return c.ExecOrderConfirmed >= 2 },
		Run: func(ctx context.Context, s *Stage) error {
			if _, err := payAndWait(ctx, s); err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the e-mail sent", 30*time.Second, func(c Counts) bool { return c.Notified >= 1 }); err != nil {
				return err
			}
			// What seven days do: retention removes the inbox rows past
			// their window, and the provider forgot the key after one.
			tag, err := s.pool.Exec(ctx, "DELETE FROM consumer_inbox WHERE order_id = $1", s.orders[0])
			if err != nil {
				return fmt.Errorf("clean the order's inbox rows: %w", err)
			}
			s.Logf("cleaned %d consumer inbox row(s) of the order, as retention does past its window", tag.RowsAffected())
			if _, err := s.call(ctx, "POST", s.FakesURL()+"/control/notifications/forget-keys", nil, nil, nil); err != nil {
				return err
			}
			s.Logf("the provider forgot its idempotency keys")
			msgs, err := labqueries.New(s.pool).ScenarioOutboxMessages(ctx, s.orders[0])
			if err != nil {
				return fmt.Errorf("find the order's messages in the outbox: %w", err)
			}
			for _, m := range msgs {
				if m.Topic == "order_confirmed" {
					_, err := s.Command(ctx, "reprocess", "--message", m.MessageID)
					return err
				}
			}
			return fmt.Errorf("no order_confirmed of order %s in the outbox", s.orders[0])
		},
	}
}
