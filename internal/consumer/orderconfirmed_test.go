package consumer_test

import (
	"errors"
	"testing"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

func TestOrderConfirmedNotifiesOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		off           *switches.Set
		wantProvider  int // notifications the provider really sent
		wantDelivered int64
	}{
		{"all guards", nil, 1, 1},
		// The provider key alone still protects the customer: the inbox saves
		// the call, the key saves the e-mail.
		{"inbox off", switches.Without(effect.GuardInbox), 1, 1},
		// The inbox alone protects sequential redeliveries...
		{"provider key off", switches.Without(effect.GuardProviderKey), 1, 1},
		// The claim alone protects every redelivery...
		{"inbox and provider key off", switches.Without(effect.GuardInbox, effect.GuardProviderKey), 1, 1},
		// ...but with none of the three, every redelivery is another e-mail.
		{"inbox, provider key and claim off", switches.Without(effect.GuardInbox, effect.GuardProviderKey, effect.GuardNotificationClaim), 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.off)
			o := b.newOrder(t)
			msg := outboxConfirmation(t, o)
			for i := 0; i < 3; i++ {
				if err := deliver(b.c.HandleOrderConfirmed, msg); err != nil {
					t.Fatalf("delivery %d: %v", i+1, err)
				}
			}
			if got := len(b.provider.Notifications()); got != tt.wantProvider {
				t.Errorf("provider sent %d notifications, want %d", got, tt.wantProvider)
			}
			if a := b.audit(t, o.ID); a.ConfirmationDelivered != tt.wantDelivered || a.ExecutionsOrderConfirmed != 3 {
				t.Errorf("confirmation_delivered=%d executions=%d, want %d and 3", a.ConfirmationDelivered, a.ExecutionsOrderConfirmed, tt.wantDelivered)
			}
		})
	}
}

// The crash window of an irreversible call: the provider sent the e-mail, we
// died before writing the inbox row. The redelivery calls again with the same
// key; the provider answers from its store and sends nothing.
func TestCrashAfterProviderCallSendsOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name         string
		off          *switches.Set
		wantProvider int
	}{
		{"with the provider key", nil, 1},
		// The claim was settled before the crash: the redelivery finds it.
		{"without the provider key", switches.Without(effect.GuardProviderKey), 1},
		{"without the provider key and the claim", switches.Without(effect.GuardProviderKey, effect.GuardNotificationClaim), 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.off)
			o := b.newOrder(t)
			msg := outboxConfirmation(t, o)
			b.faults.Arm(consumer.FaultAfterProviderCall, fault.Fail, 1)

			if err := deliver(b.c.HandleOrderConfirmed, msg); !errors.Is(err, fault.ErrInjected) {
				t.Fatalf("first delivery: err = %v, want the injected fault", err)
			}
			if err := deliver(b.c.HandleOrderConfirmed, msg); err != nil {
				t.Fatalf("redelivery: %v", err)
			}
			if got := len(b.provider.Notifications()); got != tt.wantProvider {
				t.Errorf("provider sent %d notifications, want %d", got, tt.wantProvider)
			}
			if a := b.audit(t, o.ID); a.ConfirmationDelivered != 1 {
				t.Errorf("confirmation_delivered = %d, want 1", a.ConfirmationDelivered)
			}
		})
	}
}
