package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// MaxBodyBytes is the largest webhook body accepted; larger ones get 413.
const MaxBodyBytes = 64 << 10

// EventPaymentSucceeded is the only event type that moves an order. Other
// types are acknowledged and ignored (see Ingest).
const EventPaymentSucceeded = "payment.succeeded"

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

// Parse decodes an event strictly: unknown fields, trailing data and missing
// fields are errors, because a webhook we half-understand must not move money.
func Parse(body []byte) (Event, error) {
	var e Event
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Event{}, fmt.Errorf("%w: %s", ErrMalformed, describeJSONError(err))
	}
	if dec.More() {
		return Event{}, fmt.Errorf("%w: trailing data after the JSON object", ErrMalformed)
	}
	switch {
	case !strings.HasPrefix(e.ID, "evt_") || len(e.ID) > 255:
		return Event{}, fmt.Errorf("%w: field \"id\" must start with evt_ (at most 255 characters)", ErrMalformed)
	case e.Type == "":
		return Event{}, fmt.Errorf("%w: field \"type\" is required", ErrMalformed)
	case e.Type == EventPaymentSucceeded && e.Data.OrderID == uuid.Nil:
		return Event{}, fmt.Errorf("%w: field \"data.order_id\" is required", ErrMalformed)
	case e.Type == EventPaymentSucceeded && e.Data.AmountCents <= 0:
		return Event{}, fmt.Errorf("%w: field \"data.amount_cents\" must be positive", ErrMalformed)
	}
	return e, nil
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("field %q has the wrong type (want %s)", typeErr.Field, typeErr.Type)
	}
	return err.Error()
}
