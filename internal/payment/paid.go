package payment

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// notPayable answers a payment of an order that is no longer pending: a
// refunded order is "refunded", any other is "already paid". Nothing goes to
// the gateway.
func (s *Service) notPayable(ctx context.Context, q *queries.Queries, c *claimed) error {
	if c.order.Status == order.StatusRefunded {
		return s.completeRefusal(ctx, q, c, "Order refunded",
			fmt.Sprintf("order %s was refunded; a refunded order is not charged again", c.order.ID))
	}
	return s.alreadyPaid(ctx, q, c)
}

// alreadyPaid completes this request's key at once with a 409 problem "order
// already paid", naming the order's one charge when the service knows it;
// nothing goes to the gateway.
//
// Decision: a new key does not buy a second charge of a paid order. The
// client may have lost the first key (a restarted app, a second browser tab)
// and is retrying with a fresh one; charging again is the double charge this
// package exists to prevent. The refusal is stored under the key like any
// other answer, so retries of this key keep getting it.
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

// completeRefusal stores a 409 problem with title and detail as this
// request's response, and makes it the answer.
func (s *Service) completeRefusal(ctx context.Context, q *queries.Queries, c *claimed, title, detail string) error {
	resp := Response{Status: http.StatusConflict, Body: problemBody(http.StatusConflict, title, detail)}
	if _, err := q.IdempotencyKeyComplete(ctx, completeParams(c, resp)); err != nil {
		return fmt.Errorf("store the %q response: %w", title, err)
	}
	c.done, c.resp = true, resp
	return nil
}
