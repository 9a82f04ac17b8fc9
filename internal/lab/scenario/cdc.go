package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The outbox relayed from the WAL (OUTBOX_RELAY=logical): the relay reads
// the outbox's inserts from a logical replication slot and confirms a
// transaction to the slot only after the broker took its rows. What it
// repeats, and what a relay that stops costs the server.

const cdcOrders = 4

func cdcRelayRestart() *Scenario {
	protected, without, settled := readAgainFromLastCommit(cdcOrders)
	return &Scenario{
		Name: "cdc-relay-restart",
		Summary: "with the outbox relayed from the WAL (OUTBOX_RELAY=logical), the worker is killed after its relay published " +
			"a transaction's rows and before it confirmed them to the slot: the next relay publishes them again",
		Repeated:    "order_paid published again from the slot's last confirmed position",
		Orders:      cdcOrders,
		OutboxRelay: config.RelayLogical,
		NotOn: map[string]string{config.BrokerNATS: "the stream drops a second publish of one outbox write id within its " +
			"duplicate window (2 minutes, Nats-Msg-Id), so the relay's repeat never reaches a consumer there"},
		Protected: protected,
		Without:   without,
		Settled:   settled,
		Run: func(ctx context.Context, s *Stage) error {
			// The api makes the slot at start: the orders' rows wait in it.
			if err := ordersWaiting(ctx, s, cdcOrders); err != nil {
				return err
			}
			w, err := s.StartWorker(ctx, nil, "--faults", outbox.FaultBeforeConfirm+"=crash:1")
			if err != nil {
				return err
			}
			if err := s.waitCrashed(ctx, w); err != nil {
				return err
			}
			s.Logf("worker crashed after its relay published the first transaction, before confirming it to the slot (exit 137); restarting it")
			_, err = s.StartWorker(ctx, nil)
			return err
		},
	}
}

// stalledOrders are paid while no relay reads the slot.
const stalledOrders = 2

func cdcSlotStalled() *Scenario {
	return &Scenario{
		Name: "cdc-slot-stalled",
		Summary: "with the outbox relayed from the WAL, the worker stops while orders are paid: the slot keeps the WAL " +
			"for them and for every other write, doctor fails on it, and a worker that comes back relays everything, once",
		Repeated:    "nothing: the slot holds the WAL until a relay confirms it",
		Orders:      1 + stalledOrders,
		OutboxRelay: config.RelayLogical,
		Protected:   Expect{Checks: once(1 + stalledOrders)},
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.StartFakes(ctx); err != nil {
				return err
			}
			if err := s.StartAPI(ctx); err != nil {
				return err
			}
			w, err := s.StartWorker(ctx, nil)
			if err != nil {
				return err
			}
			if _, _, err := s.PaidOrder(ctx); err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the first e-mail", 30*time.Second, func(c Counts) bool { return c.Notified >= 1 }); err != nil {
				return err
			}
			if err := w.Terminate(10 * time.Second); err != nil {
				return err
			}
			s.Logf("worker stopped: no relay reads the slot")
			before, err := s.slotRetained(ctx)
			if err != nil {
				return err
			}
			for range stalledOrders {
				if _, _, err := s.PaidOrder(ctx); err != nil {
					return err
				}
			}
			// Other writes go on meanwhile, anywhere on the server: two WAL
			// segments end (16 MiB each), and the slot keeps them.
			for range 2 {
				if _, err := s.pool.Exec(ctx, `SELECT pg_logical_emit_message(false, 'orderpaid-scenario', 'other writes'), pg_switch_wal()`); err != nil {
					return fmt.Errorf("end a WAL segment: %w", err)
				}
			}
			after, err := s.slotRetained(ctx)
			if err != nil {
				return err
			}
			if after <= before {
				return fmt.Errorf("the slot kept %d bytes of WAL with no reader, %d before: it should have grown", after, before)
			}
			s.Logf("slot with no reader: it keeps %d KiB of WAL, %d KiB before the worker stopped", after>>10, before>>10)
			out, err := s.Command(ctx, "doctor")
			if err == nil || !strings.Contains(out, "has no reader and keeps") {
				return fmt.Errorf("orderpaid doctor did not fail on the stalled slot (err %v):\n%s", err, out)
			}
			s.Logf("orderpaid doctor: %s", firstLineWith(out, "OUTBOX_RELAY"))
			_, err = s.StartWorker(ctx, nil)
			return err
		},
	}
}

// slotRetained is how much WAL the stage's slot keeps, in bytes.
func (s *Stage) slotRetained(ctx context.Context) (int64, error) {
	retained, _, ok, err := outbox.SlotLag(ctx, s.pool)
	if err == nil && !ok {
		err = fmt.Errorf("no slot %s", outbox.SlotName(s.dbName))
	}
	return retained, err
}

// firstLineWith is the first line of out that holds sub.
func firstLineWith(out, sub string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, sub) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func relayOrder() *Scenario {
	return &Scenario{
		Name: "relay-order",
		Summary: "two transactions write order_paid for one paid order, and the first to begin commits last: the polling " +
			"relay publishes them in transaction order once the first has ended, the relay from the WAL in commit order, at each commit",
		Repeated: "order_paid written twice for a paid order (a backfill racing a redelivery)",
		Broker:   config.BrokerPostgres,
		BrokerReason: "it reads the order of publication from the topic's table; the order it shows is the relay's, " +
			"the same on every broker",
		// The two late messages find the order paid: three executions.
		Protected: Expect{Checks: once(1, eq(ExecOrderPaid, 3))},
		Settled:   func(c Counts) bool { return c.ExecOrderPaid >= 3 },
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.Start(ctx); err != nil {
				return err
			}
			id, _, err := s.PaidOrder(ctx)
			if err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, "the e-mail", 30*time.Second, func(c Counts) bool { return c.Notified >= 1 }); err != nil {
				return err
			}
			first, second, err := s.crossedWrites(ctx, id)
			if err != nil {
				return err
			}
			got, err := s.publishedOrder(ctx, first, second)
			if err != nil {
				return err
			}
			want, how := []string{first, second}, "transaction order: the first to begin, first, once it had ended"
			if s.fromWAL() {
				want, how = []string{second, first}, "commit order: the first to commit, first, at its commit"
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("order_paid published as %v, want %v (%s)", got, want, how)
			}
			s.Logf("published in %s", how)
			return nil
		},
	}
}

// crossedWrites writes two order_paid messages for order id into the outbox
// in two transactions, the first to begin committing last, and returns
// their ids. It checks what a relay has published of the second while the
// first is still open: the polling relay nothing (it reads only below the
// oldest open transaction), the relay from the WAL the second already.
func (s *Stage) crossedWrites(ctx context.Context, id uuid.UUID) (first, second string, err error) {
	write := func(tx pgx.Tx, source string) (string, error) {
		m, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: id, AmountCents: 10000, Source: source})
		if err != nil {
			return "", err
		}
		return m.UUID, outbox.Publish(ctx, tx, messages.TopicOrderPaid, m)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", "", err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if first, err = write(tx, "scenario:began-first"); err != nil {
		return "", "", err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		second, err = write(tx, "scenario:committed-first")
		return err
	})
	if err != nil {
		return "", "", err
	}
	time.Sleep(time.Second) // a relay's turn
	early, err := s.publishedOrder(ctx, second)
	if err != nil {
		return "", "", err
	}
	s.Logf("while the first transaction is open, published of the second: %d", len(early))
	if wantEarly := s.fromWAL(); (len(early) == 1) != wantEarly {
		return "", "", fmt.Errorf("while the first transaction was open, %d of the committed second published: want %v", len(early), wantEarly)
	}
	return first, second, tx.Commit(ctx)
}

// publishedOrder waits up to 60s for the messages ids to be in the
// order_paid topic's table and returns them in the order they were
// published; with one id, it returns what is there at once. The wait is
// long because the polling relay reads only below the server's oldest open
// transaction: on a server shared with other work (the test suite's other
// packages), any long transaction there holds it back.
func (s *Stage) publishedOrder(ctx context.Context, ids ...string) ([]string, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		rows, err := s.pool.Query(ctx, `SELECT uuid FROM watermill_order_paid WHERE uuid = ANY($1) ORDER BY "offset"`, ids)
		if err != nil {
			return nil, err
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(got) == len(ids) || len(ids) == 1 || time.Now().After(deadline) {
			return got, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
