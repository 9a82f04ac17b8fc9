package consumer_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// A crash right after the transition committed: with the outbox the
// confirmation committed with it; publishing after commit instead loses it
// for good, because the redelivery finds the order paid and does not
// publish again.
func TestOutboxKeepsTheConfirmationThroughACrashAfterCommit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name          string
		off           *switches.Set
		wantConfirmed int // confirmations that exist anywhere: outbox or broker
	}{
		{"with the outbox", nil, 1},
		{"publishing after commit", switches.Without(effect.GuardOutbox), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.off)
			brk, err := broker.New(context.Background(), config.Config{Broker: config.BrokerPostgres}, b.pool,
				watermill.NewSlogLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = brk.Close() })
			if err := brk.Provision("order_confirmed", "order_confirmed"); err != nil {
				t.Fatal(err)
			}
			b.c = switches.Consumers(consumer.NewConsumers(b.pool, notify.NewClient("http://127.0.0.1:1", nil)).WithFaults(b.faults), b.guards, brk.Publisher)
			o := b.newOrder(t)
			msg := orderPaid(t, o, "evt_1")
			b.faults.Arm(consumer.FaultAfterMarkPaid, fault.Fail, 1)

			// As the router runs it: held, for the outbox's mistake.
			handle := b.routed(b.c.HandleOrderPaid)
			if err := deliver(handle, msg); !errors.Is(err, fault.ErrInjected) {
				t.Fatalf("first delivery: err = %v, want the injected crash", err)
			}
			if err := deliver(handle, msg); err != nil {
				t.Fatalf("redelivery: %v", err)
			}
			inOutbox := int(b.audit(t, o.ID).ConfirmationEnqueued)
			onBroker := b.count(t, "SELECT count(*) FROM watermill_order_confirmed")
			if got := inOutbox + onBroker; got != tt.wantConfirmed {
				t.Errorf("confirmations: %d in the outbox + %d on the broker = %d, want %d", inOutbox, onBroker, got, tt.wantConfirmed)
			}
		})
	}
}
