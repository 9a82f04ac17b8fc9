package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

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
