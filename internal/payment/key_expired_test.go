package payment_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// TestKeyReusedAfterItExpired: a client sends a key again after its
// retention, once the Cleaner has deleted it and the gateway has forgotten
// it too (as gateways do, Stripe after about a day). The key is a new
// request, not a replay; the order's charge claim is what still answers,
// with the order's one charge. Without the claim the reused key charges
// the order a second time.
func TestKeyReusedAfterItExpired(t *testing.T) {
	t.Parallel()
	const retention = time.Hour
	guardOnAndOff(t, payment.Config{Retention: retention}, func(t *testing.T, b *bundle) (queries.Order, int) {
		o := b.newOrder(t, "cust-key-expired")
		first := decodeCharged(t, mustCharge(t, b.svc, o, "k1").Body)

		// The Cleaner runs past k1's retention, by its own clock.
		later := payment.NewCleaner(b.pool, payment.Config{
			Retention: retention, Clock: func() time.Time { return time.Now().Add(retention + time.Minute) },
		}, nil)
		if n, err := later.RunOnce(context.Background()); err != nil || n != 1 {
			t.Fatalf("cleaner: deleted %d, %v; want k1 deleted", n, err)
		}
		b.gw.ForgetKeys()

		resp, err := pay(b.svc, o, "k1", "")
		if err != nil {
			t.Fatalf("k1 reused: %v", err)
		}
		if resp.Replayed {
			t.Fatalf("k1 reused = %d replayed, want a new request (the stored response is gone)", resp.Status)
		}
		if b.svcGuarded() {
			mustBeAlreadyPaid(t, resp)
			if !strings.Contains(string(resp.Body), first.Charge.ID) {
				t.Fatalf("k1 reused = %s, want the order's one charge %s named", resp.Body, first.Charge.ID)
			}
			if n := b.gatewayCalls(o); n != 1 {
				t.Fatalf("gateway calls = %d, want 1 (the reused key never reaches the gateway)", n)
			}
		} else if resp.Status != http.StatusCreated {
			t.Fatalf("k1 reused without the charge claim = %d %s, want 201 (a second charge)", resp.Status, resp.Body)
		}
		return o, len(b.charges(o))
	})
}
