package payment

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// RefundKey is the Idempotency-Key sent to the payment gateway for an
// order's refund: "order:<order id>:refund".
//
// Effect protected: the refund, money given back, as irreversible as the
// charge. Like ChargeKey it comes from the order's intent (its one refund
// request, refund_requests), never from a delivery or a request: the
// refund_requested message redelivered, a worker that crashed between the
// gateway's answer and its record, two workers racing: each sends this key,
// and the gateway refunds once and answers the others from its store.
func RefundKey(orderID uuid.UUID) string {
	return fmt.Sprintf("order:%s:refund", orderID)
}

// RefundRequest is the body of the gateway's POST /refunds: it refunds a
// charge, named by the gateway's charge id.
type RefundRequest struct {
	ChargeID    string `json:"charge_id"`
	AmountCents int64  `json:"amount_cents"`
}

// Refund sends one POST /refunds with idempotencyKey in the Idempotency-Key
// header. As with Charge, every HTTP answer is returned as a GatewayAnswer,
// and the error is for a call that got no answer, after which the refund
// may or may not have happened: retry it with the same key.
func (c *GatewayClient) Refund(ctx context.Context, idempotencyKey string, req RefundRequest) (GatewayAnswer, error) {
	return c.post(ctx, "/refunds", idempotencyKey, req)
}
