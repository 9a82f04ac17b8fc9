package payment

import (
	"context"
	"fmt"
	"time"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Charge states, as order_charges.state spells them.
const (
	chargeCharging = "charging"
	chargeCharged  = "charged"
	chargeRefused  = "refused"
)

// claimCharge runs in phase 1, in the key's transaction, once this request
// has won its key (a new key, or one recovered after a crash). It decides
// whether this request may call the gateway for the order.
//
// Effect protected: the charge itself, whatever the Idempotency-Key. The key
// protects one request; a client that mints a new key per retry, a second
// browser tab or a crashed app with a fresh key sends another request for the
// same payment. One order_charges row per order (its primary key) is the
// order's payment intent:
//
//   - the order is no longer pending (paid, or refunded): "already paid" or
//     "refunded", stored under this key; nothing goes to the gateway,
//     whatever the order's charge row says. The order's status is the
//     service's own word that the payment happened; a charge row still
//     "charging" (its answer was lost, the webhook paid the order) must not
//     send the order to the gateway again, where only the gateway's memory of
//     ChargeKey would stand between the customer and a second charge, and
//     gateways forget keys (Stripe after about 24 hours);
//   - no row yet: INSERT ... ON CONFLICT DO NOTHING lets exactly one of any
//     number of concurrent requests, whatever their keys, claim attempt 1;
//     the others wait for its commit, insert nothing, and read the row below;
//   - charged: "order already paid", stored under this key;
//   - charging with a live lock: *InFlightError, another request is at the
//     gateway (nothing is stored, so this key can be retried);
//   - charging with an expired lock: its holder crashed or its answer was
//     lost, and the charge may have happened. Take it over keeping the
//     attempt, so the gateway gets the same key (ChargeKey) and answers
//     with the first charge instead of making a second;
//   - refused: the gateway refused the last attempt for good and charged
//     nothing, so the next attempt may start, under a new gateway key.
//
// The take-over and the next attempt are conditional UPDATEs, re-checked by
// PostgreSQL under READ COMMITTED: of concurrent callers exactly one changes
// the row, the others are told the charge is in flight.
func (s *Service) claimCharge(ctx context.Context, q *queries.Queries, c *claimed) error {
	if c.order.Status != order.StatusPending {
		return s.notPayable(ctx, q, c)
	}
	n, err := q.OrderChargeInsert(ctx, queries.OrderChargeInsertParams{
		OrderID: c.order.ID, HolderScope: c.scope, HolderKey: c.key, LockedUntil: &c.lockedUntil,
	})
	if err != nil {
		return fmt.Errorf("claim the charge of order %s: %w", c.order.ID, err)
	}
	if n == 1 {
		c.holdAttempt(1)
		return nil
	}
	ch, err := q.OrderChargeGet(ctx, c.order.ID)
	if err != nil {
		return fmt.Errorf("read the charge of order %s: %w", c.order.ID, err)
	}
	switch {
	case ch.State == chargeCharged:
		return s.alreadyPaid(ctx, q, c)
	case ch.State == chargeRefused:
		return s.nextAttempt(ctx, q, c, ch)
	case ch.LockedUntil != nil && ch.LockedUntil.After(time.Now()):
		return orderInFlight(time.Until(*ch.LockedUntil))
	default:
		return s.takeOver(ctx, q, c, ch)
	}
}

// takeOver claims a charge whose outcome is unknown, keeping its attempt.
func (s *Service) takeOver(ctx context.Context, q *queries.Queries, c *claimed, ch queries.OrderCharge) error {
	won, err := q.OrderChargeTakeOver(ctx, queries.OrderChargeTakeOverParams{
		OrderID: c.order.ID, Attempt: ch.Attempt, HolderScope: c.scope, HolderKey: c.key, LockedUntil: &c.lockedUntil,
	})
	if err != nil {
		return fmt.Errorf("take over the charge of order %s: %w", c.order.ID, err)
	}
	if won == 0 {
		return orderInFlight(s.cfg.LockTimeout)
	}
	c.holdAttempt(ch.Attempt)
	return nil
}

// nextAttempt claims the attempt after a refused one.
func (s *Service) nextAttempt(ctx context.Context, q *queries.Queries, c *claimed, ch queries.OrderCharge) error {
	won, err := q.OrderChargeRetry(ctx, queries.OrderChargeRetryParams{
		OrderID: c.order.ID, Attempt: ch.Attempt, HolderScope: c.scope, HolderKey: c.key, LockedUntil: &c.lockedUntil,
	})
	if err != nil {
		return fmt.Errorf("start attempt %d of the charge of order %s: %w", ch.Attempt+1, c.order.ID, err)
	}
	if won == 0 {
		return orderInFlight(s.cfg.LockTimeout)
	}
	c.holdAttempt(ch.Attempt + 1)
	return nil
}

// holdAttempt makes attempt of the order's charge this request's: the
// gateway gets the order's key for it (ChargeKey).
func (c *claimed) holdAttempt(attempt int32) {
	c.attempt, c.gatewayKey = attempt, ChargeKey(c.order.ID, attempt)
}
