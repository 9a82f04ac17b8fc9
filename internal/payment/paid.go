package payment

import (
	"context"
	"fmt"
	"net/http"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// alreadyPaid completes this request's key at once with a 409 problem "order
// already paid"; nothing goes to the gateway.
//
// Decision: a new key does not buy a second charge of a paid order. The
// client may have lost the first key (a restarted app, a second browser tab)
// and is retrying with a fresh one; charging again is the double charge this
// package exists to prevent. The refusal is stored under the key like any
// other answer, so retries of this key keep getting it.
func (s *Service) alreadyPaid(ctx context.Context, q *queries.Queries, c *claimed) error {
	resp := Response{Status: http.StatusConflict, Body: problemBody(http.StatusConflict, "Order already paid",
		fmt.Sprintf("order %s is already paid; it was not charged again", c.order.ID))}
	if _, err := q.IdempotencyKeyComplete(ctx, completeParams(c, resp)); err != nil {
		return fmt.Errorf("store already-paid response: %w", err)
	}
	c.done, c.resp = true, resp
	return nil
}
