// Package messages defines the messages that travel between the services: their
// payloads, their deterministic ids and the metadata every hop relies on.
//
// Message ids are derived from the business fact they announce, never drawn
// at random, so the same fact published twice carries the same id and every
// inbox downstream can recognise it.
package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
)

// Topics.
const (
	TopicOrderPaid       = "order_paid"
	TopicOrderConfirmed  = "order_confirmed"
	TopicOrderRefunded   = "order_refunded"   // the provider gave an order's payment back (a webhook)
	TopicRefundRequested = "refund_requested" // an order's money must be given back
	TopicRefundConfirmed = "refund_confirmed" // an order moved to refunded; the customer is told
)

// MetadataOrderID carries the order id on every message, for the audit, the
// traces and an operator.
const MetadataOrderID = "order_id"

// MetadataReplayedBy marks an operator's replay (orderpaid reprocess): handled
// like any delivery, but the audit does not count its outbox copy.
const MetadataReplayedBy = "replayed_by"

// MetadataOutboxWriteID is a fresh id per outbox write, the same when the
// relay publishes a row twice, new for a replay or a backfill: as NATS's
// Nats-Msg-Id, the server drops the relay's repeats but never a replay.
const MetadataOutboxWriteID = broker.MetadataOutboxWriteID

// namespace roots the deterministic (UUIDv5) message ids of this service.
var namespace = uuid.MustParse("6f1b7a52-3c1e-4d7a-9a51-0e4d6b1f0a01")

// ErrMalformed marks a payload that can never be processed: the consumer
// sends it to the poison queue instead of retrying it.
var ErrMalformed = errors.New("malformed message")

// OrderPaid announces that the provider reported a payment for an order.
type OrderPaid struct {
	OrderID     uuid.UUID `json:"order_id"`
	AmountCents int64     `json:"amount_cents"`
	// Source is what caused this message: "webhook:<event id>" or "backfill".
	Source string `json:"source"`
}

// OrderConfirmed announces that an order moved to paid: exactly one per order.
type OrderConfirmed struct {
	OrderID uuid.UUID `json:"order_id"`
}

// NewOrderPaid builds the order_paid message for one cause. Its id is
// UUIDv5(source): the same provider event always gives the same message id.
func NewOrderPaid(p OrderPaid) (*message.Message, error) {
	return newMessage(uuid.NewSHA1(namespace, []byte("order_paid/"+p.Source+"/"+p.OrderID.String())), p.OrderID, p)
}

// NewOrderConfirmed builds the confirmation for an order. Its id is
// UUIDv5(order id): one order, one confirmation id, however often it is sent.
func NewOrderConfirmed(orderID uuid.UUID) (*message.Message, error) {
	return newMessage(uuid.NewSHA1(namespace, []byte("order_confirmed/"+orderID.String())), orderID, OrderConfirmed{OrderID: orderID})
}

func newMessage(id, orderID uuid.UUID, payload any) (*message.Message, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	msg := message.NewMessage(id.String(), b)
	msg.Metadata.Set(MetadataOrderID, orderID.String())
	return msg, nil
}

// DecodeOrderPaid parses an order_paid payload strictly.
func DecodeOrderPaid(payload []byte) (OrderPaid, error) {
	var p OrderPaid
	err := decodeForOrder(payload, &p, &p.OrderID)
	return p, err
}

// DecodeOrderConfirmed parses an order_confirmed payload strictly.
func DecodeOrderConfirmed(payload []byte) (OrderConfirmed, error) {
	var p OrderConfirmed
	err := decodeForOrder(payload, &p, &p.OrderID)
	return p, err
}

// decodeForOrder decodes payload strictly into v, whose order id is at
// orderID: a message with no order id is malformed.
func decodeForOrder(payload []byte, v any, orderID *uuid.UUID) error {
	if err := decodeStrict(payload, v); err != nil {
		return err
	}
	if *orderID == uuid.Nil {
		return fmt.Errorf("%w: order_id is missing", ErrMalformed)
	}
	return nil
}

func decodeStrict(payload []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the JSON value", ErrMalformed)
	}
	return nil
}
