package payment

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

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
// won its key. Whatever the key, it decides whether this request may call the
// gateway; one order_charges row per order is its payment intent:
//
//   - the order is no longer pending: notPayable, whatever its row says;
//   - no row yet: exactly one of any number of requests claims attempt 1;
//   - charged: alreadyPaid, stored under this key;
//   - charging with a live lock: *InFlightError, nothing stored;
//   - charging with an expired lock, or released: taken over, the same
//     attempt and ChargeKey, its outcome unknown, so askFirst asks first;
//   - refused: the next attempt, under a new gateway key.
//
// Whether a lock is live is the database's answer (held), on its own clock.
// Why the status comes first, and how the conditional UPDATEs leave one
// winner: docs/techniques/idempotency-key.md.
func (s *Service) claimCharge(ctx context.Context, q *queries.Queries, c *claimed) error {
	if c.order.Status != order.StatusPending {
		return s.notPayable(ctx, q, c)
	}
	n, err := q.OrderChargeInsert(ctx, queries.OrderChargeInsertParams{
		OrderID: c.order.ID, HolderScope: c.scope, HolderKey: c.key, LeaseMs: s.cfg.leaseMs(),
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
	p := queries.OrderChargeTakeOverParams{
		OrderID: c.order.ID, Attempt: ch.Attempt, HolderScope: c.scope, HolderKey: c.key, LeaseMs: s.cfg.leaseMs(),
	}
	switch {
	case ch.State == chargeCharged:
		return s.alreadyPaid(ctx, q, c)
	case ch.State == chargeRefused:
		won, err := q.OrderChargeRetry(ctx, queries.OrderChargeRetryParams(p))
		return s.takeOver(c, ch.Attempt+1, won, err)
	case ch.Held:
		return orderInFlight(time.Duration(ch.LockLeftMs) * time.Millisecond)
	}
	c.unknown = true
	won, err := q.OrderChargeTakeOver(ctx, p)
	return s.takeOver(c, ch.Attempt, won, err)
}

// takeOver makes attempt this request's when its conditional UPDATE won (one
// concurrent caller does); the others are told the order is in flight.
func (s *Service) takeOver(c *claimed, attempt int32, won int64, err error) error {
	if err != nil {
		return fmt.Errorf("claim attempt %d of the charge of order %s: %w", attempt, c.order.ID, err)
	}
	if won == 0 {
		return orderInFlight(s.cfg.LockTimeout)
	}
	c.holdAttempt(attempt)
	return nil
}

// holdAttempt makes attempt of the order's charge this request's.
func (c *claimed) holdAttempt(attempt int32) {
	c.attempt, c.gatewayKey = attempt, ChargeKey(c.order.ID, attempt)
}

// notPayable answers for an order no longer pending: "refunded" or
// "already paid"; nothing goes to the gateway.
func (s *Service) notPayable(ctx context.Context, q *queries.Queries, c *claimed) error {
	if c.order.Status == order.StatusRefunded {
		return s.completeRefusal(ctx, q, c, "Order refunded",
			fmt.Sprintf("order %s was refunded; a refunded order is not charged again", c.order.ID))
	}
	return s.alreadyPaid(ctx, q, c)
}

// alreadyPaid completes the key at once with a 409 "order already paid",
// naming the order's charge when known. A new key does not buy a second
// charge: a client that lost its key (a restarted app, a second tab) retries
// with a fresh one, and charging again is the double charge this package
// prevents. The refusal is stored under the key like any answer.
func (s *Service) alreadyPaid(ctx context.Context, q *queries.Queries, c *claimed) error {
	detail := fmt.Sprintf("order %s is already paid; it was not charged again", c.order.ID)
	chargeID, err := q.OrderChargeID(ctx, c.order.ID)
	switch {
	case err == nil:
		detail = fmt.Sprintf("order %s is already paid by charge %s; it was not charged again", c.order.ID, chargeID)
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("read the charge of order %s: %w", c.order.ID, err)
	}
	return s.completeRefusal(ctx, q, c, "Order already paid", detail)
}

// completeRefusal stores a 409 problem as this request's answer.
func (s *Service) completeRefusal(ctx context.Context, q *queries.Queries, c *claimed, title, detail string) error {
	resp := Response{Status: http.StatusConflict, Body: problemBody(http.StatusConflict, title, detail)}
	if _, err := q.IdempotencyKeyComplete(ctx, completeParams(c, resp)); err != nil {
		return fmt.Errorf("store the %q response: %w", title, err)
	}
	c.done, c.resp = true, resp
	return nil
}
