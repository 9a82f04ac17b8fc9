package webhook_test

import (
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
)

// The provider's retry of one event enqueues one order_paid. With the inbox
// switched off by the lab (--without webhook-inbox), every delivery
// enqueues: the damage the workshop shows, and proof that switches.Ingestor
// wires the mistake in the guard's place.
func TestWebhookInboxOff(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name         string
		off          *switches.Set
		wantOutcome  effect.Outcome // of the retry
		wantEnqueued int
	}{
		{"guarded", nil, effect.AlreadyApplied, 1},
		{"webhook inbox off", switches.Without(effect.GuardWebhookInbox), effect.Applied, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool, in, o := acceptSetup(t)
			in = switches.Ingestor(in, tt.off)
			if _, err := deliverEvent(in, "evt_1", o); err != nil {
				t.Fatal(err)
			}
			res, err := deliverEvent(in, "evt_1", o)
			if err != nil || res.Outcome != tt.wantOutcome {
				t.Fatalf("retry: %+v, %v; want %s", res, err, tt.wantOutcome)
			}
			if got := len(orderPaidIDs(t, pool)); got != tt.wantEnqueued {
				t.Errorf("order_paid in the outbox: %d, want %d", got, tt.wantEnqueued)
			}
		})
	}
}
