package payment

import (
	"context"
	"fmt"
	"net/http"

	"github.com/orderpaid/orderpaid/internal/db"
	"github.com/orderpaid/orderpaid/internal/order"
)

// refuseIfPaid runs in phase 1 right after a new key was inserted. If the
// order is paid already it completes the key at once with a 409 problem
// "order already paid" and nothing goes to the gateway.
//
// Decision: a new key does not buy a second charge of a paid order. The
// client may have lost the first key (a restarted app, a second browser tab)
// and is retrying with a fresh one; charging again is the double charge this
// package exists to prevent. The refusal is stored under the key like any
// other answer, so retries of this key keep getting it.
//
// "Paid" means either of:
//
//   - the order's status is paid: the gateway's webhook has arrived;
//   - another key of this order stored a successful charge: the gateway took
//     the money, and its webhook is still on its way.
//
// Two new keys that race for an unpaid order both pass this check; see the
// package documentation.
func (s *Service) refuseIfPaid(ctx context.Context, q *db.Queries, c *claimed) error {
	paid := c.order.Status == order.StatusPaid
	if !paid {
		charged, err := q.IdempotencyKeyOrderCharged(ctx, db.IdempotencyKeyOrderChargedParams{
			OrderID: c.order.ID, Key: c.key, ChargedStatus: http.StatusCreated,
		})
		if err != nil {
			return fmt.Errorf("check earlier charges of order %s: %w", c.order.ID, err)
		}
		paid = charged
	}
	if !paid {
		return nil
	}
	resp := Response{Status: http.StatusConflict, Body: problemBody(http.StatusConflict, "Order already paid",
		fmt.Sprintf("order %s is already paid; it was not charged again", c.order.ID))}
	if _, err := q.IdempotencyKeyComplete(ctx, completeParams(c, resp)); err != nil {
		return fmt.Errorf("store already-paid response: %w", err)
	}
	c.done, c.resp = true, resp
	return nil
}
