package payment_test

import (
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/payment"
)

// Without the Idempotency-Key guard, the client's retry is a second charge:
// the damage the scenario "--without idempotency-key" shows.
func TestPayWithoutKeyChargesEveryRetry(t *testing.T) {
	t.Parallel()
	b := setupWithout(t, payment.Config{}, switches.Without(effect.GuardIdempotencyKey))
	o := b.newOrder(t, "cust-unguarded")
	for i := 0; i < 2; i++ {
		resp, err := pay(b.svc, o, "k1", `{}`)
		if err != nil || resp.Status != 201 || resp.Replayed {
			t.Fatalf("attempt %d: %d replayed=%v %v, want a fresh 201", i+1, resp.Status, resp.Replayed, err)
		}
	}
	if n := len(b.charges(o)); n != 2 {
		t.Errorf("gateway charges = %d, want 2 (one per retry)", n)
	}
}
