package webhook

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	watermill "github.com/ThreeDotsLabs/watermill/message"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/platform/strictjson"
)

// MaxBodyBytes is the largest webhook body accepted; larger ones get 413.
const MaxBodyBytes = 64 << 10

// The event types that move an order; others are acked and ignored (Ingest).
const (
	EventPaymentSucceeded = "payment.succeeded"
	EventPaymentRefunded  = "payment.refunded" // the order's payment given back, in full
)

// ErrMalformed means the body is not a valid event; the message names the field.
var ErrMalformed = errors.New("malformed webhook event")

// Event is a provider event as delivered.
type Event struct {
	ID   string    `json:"id"`
	Type string    `json:"type"`
	Data EventData `json:"data"`
}

// EventData is the payload of payment events.
type EventData struct {
	OrderID     uuid.UUID `json:"order_id"`
	AmountCents int64     `json:"amount_cents"`
	ChargeID    string    `json:"charge_id,omitempty"`
}

// Parse decodes an event strictly (strictjson.Decode): a webhook we
// half-understand must not move money, so {"id":"evt_ok","ID":"evt_other"} is
// refused. Every error wraps ErrMalformed and names the field.
func Parse(body []byte) (Event, error) {
	var e Event
	if err := strictjson.Decode(body, &e); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	switch {
	case !validEventID(e.ID):
		return Event{}, fmt.Errorf("%w: field \"id\" must be evt_ followed by the provider's id, without spaces or control characters (at most %d bytes)",
			ErrMalformed, maxEventIDLength)
	case e.Type == "":
		return Event{}, fmt.Errorf("%w: field \"type\" is required", ErrMalformed)
	case e.movesOrder() && e.Data.OrderID == uuid.Nil:
		return Event{}, fmt.Errorf("%w: field \"data.order_id\" is required", ErrMalformed)
	case e.movesOrder() && e.Data.AmountCents <= 0:
		return Event{}, fmt.Errorf("%w: field \"data.amount_cents\" must be positive", ErrMalformed)
	}
	return e, nil
}

// movesOrder reports whether the event is of a type that moves an order.
func (e Event) movesOrder() bool {
	return e.Type == EventPaymentSucceeded || e.Type == EventPaymentRefunded
}

// maxEventIDLength bounds the event id, in bytes.
const maxEventIDLength = 255

// validEventID reports whether id can key the inbox: "evt_" then at least
// one character, none a space or a control character.
func validEventID(id string) bool {
	rest, ok := strings.CutPrefix(id, "evt_")
	if !ok || rest == "" || len(id) > maxEventIDLength {
		return false
	}
	for _, r := range rest {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// message is the message an event causes, and its topic.
func message(ev Event) (string, *watermill.Message, error) {
	if ev.Type == EventPaymentRefunded {
		msg, err := messages.NewOrderRefunded(messages.OrderRefunded{
			OrderID: ev.Data.OrderID, AmountCents: ev.Data.AmountCents, Source: "webhook:" + ev.ID,
		})
		return messages.TopicOrderRefunded, msg, err
	}
	msg, err := messages.NewOrderPaid(messages.OrderPaid{
		OrderID: ev.Data.OrderID, AmountCents: ev.Data.AmountCents, Source: "webhook:" + ev.ID,
	})
	return messages.TopicOrderPaid, msg, err
}
