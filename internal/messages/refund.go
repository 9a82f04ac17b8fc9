package messages

import (
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
)

// The refund flow's messages, beside the order_paid flow's in messages.go:
// the same deterministic ids and strict decoding.

// OrderRefunded announces that the provider reported a refund of an order.
type OrderRefunded struct {
	OrderID     uuid.UUID `json:"order_id"`
	AmountCents int64     `json:"amount_cents"`
	// Source is what caused this message: "webhook:<event id>".
	Source string `json:"source"`
}

// Refund reasons, as refund_requests stores them.
const (
	ReasonCustomerRequest = "customer_request"
	ReasonOutOfStock      = "out_of_stock"
)

// RefundRequested asks for an order's money to be given back: exactly one per
// order, whoever asked.
type RefundRequested struct {
	OrderID uuid.UUID `json:"order_id"`
	// Reason is ReasonCustomerRequest or ReasonOutOfStock.
	Reason string `json:"reason"`
}

// RefundConfirmed announces that an order moved to refunded: exactly one per
// order.
type RefundConfirmed struct {
	OrderID uuid.UUID `json:"order_id"`
}

// NewOrderRefunded builds the order_refunded message for one cause. Its id
// is UUIDv5(source): the same provider event always gives the same id.
func NewOrderRefunded(p OrderRefunded) (*message.Message, error) {
	return newMessage(uuid.NewSHA1(namespace, []byte("order_refunded/"+p.Source+"/"+p.OrderID.String())), p.OrderID, p)
}

// NewRefundRequested builds the refund request of an order. Its id is
// UUIDv5(order id): an order has one refund intent (refund_requests).
func NewRefundRequested(p RefundRequested) (*message.Message, error) {
	return newMessage(uuid.NewSHA1(namespace, []byte("refund_requested/"+p.OrderID.String())), p.OrderID, p)
}

// NewRefundConfirmed builds the refund notice of an order. Its id is
// UUIDv5(order id): one order, one notice id, however often it is sent.
func NewRefundConfirmed(orderID uuid.UUID) (*message.Message, error) {
	return newMessage(uuid.NewSHA1(namespace, []byte("refund_confirmed/"+orderID.String())), orderID, RefundConfirmed{OrderID: orderID})
}

// DecodeOrderRefunded parses an order_refunded payload strictly.
func DecodeOrderRefunded(payload []byte) (OrderRefunded, error) {
	var p OrderRefunded
	err := decodeForOrder(payload, &p, &p.OrderID)
	return p, err
}

// DecodeRefundRequested parses a refund_requested payload strictly.
func DecodeRefundRequested(payload []byte) (RefundRequested, error) {
	var p RefundRequested
	if err := decodeForOrder(payload, &p, &p.OrderID); err != nil {
		return p, err
	}
	if p.Reason != ReasonCustomerRequest && p.Reason != ReasonOutOfStock {
		return p, fmt.Errorf("%w: reason %q is neither %s nor %s", ErrMalformed, p.Reason, ReasonCustomerRequest, ReasonOutOfStock)
	}
	return p, nil
}

// DecodeRefundConfirmed parses a refund_confirmed payload strictly.
func DecodeRefundConfirmed(payload []byte) (RefundConfirmed, error) {
	var p RefundConfirmed
	err := decodeForOrder(payload, &p, &p.OrderID)
	return p, err
}
