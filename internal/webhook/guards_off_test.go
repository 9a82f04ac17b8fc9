package webhook_test

import (
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/levers"
)

// The provider's retry of one event enqueues one order_paid. With the inbox
// switched off by the lab's levers (--without webhook-inbox), every delivery
// enqueues: the damage the workshop shows, and proof that WithLevers reaches
// the guard.
func TestWebhookInboxLever(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name         string
		lv           levers.Levers
		wantOutcome  effect.Outcome // of the retry
		wantEnqueued int
	}{
		{"guarded", levers.None(), effect.AlreadyApplied, 1},
		{"webhook inbox off", levers.None().Without(levers.WebhookInbox), effect.Applied, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool, in, o := acceptSetup(t)
			in = in.WithLevers(tt.lv)
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
