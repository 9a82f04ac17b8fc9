package payment

import (
	"errors"
	"fmt"
	"time"
)

// Errors [Service.Pay] returns for requests it refused before or instead of
// charging. The HTTP layer maps each to its status code; none of them is
// stored under the key, so the client may correct the request and send it
// again.
var (
	// ErrKeyMissing (400): the request has no usable Idempotency-Key header:
	// it is absent or empty, longer than [MaxKeyLength], or holds characters
	// other than printable ASCII. Without a key a retry cannot be told apart
	// from a new payment, so the request is refused rather than charged.
	ErrKeyMissing = errors.New("missing or unusable Idempotency-Key header")

	// ErrKeyMismatch (422): the key was first used with another request (a
	// different order or body). Answering the stored response would lie about
	// what this request did; running it would charge under a reused key.
	ErrKeyMismatch = errors.New("this Idempotency-Key was already used with a different request")

	// ErrInvalidBody (400): the request body is not a valid payment request.
	// It is wrapped with a message naming the field.
	ErrInvalidBody = errors.New("invalid request body")

	// ErrGatewayUnavailable (502/503): the gateway failed in a way that may
	// pass (a 5xx, a timeout, a dropped connection). The outcome is not
	// stored and the key is released, so the client's retry with the same key
	// runs at once; it asks the gateway what it did for the order before
	// sending anything (askFirst), so a charge that did happen is answered,
	// never made again.
	ErrGatewayUnavailable = errors.New("payment gateway unavailable")
)

// InFlightError (409 with Retry-After) means another request holds the key's
// lock: it is charging right now, or it crashed and its lock has not expired
// yet. Waiting for it is the only safe answer; running this request too
// would race it to the gateway.
//
// Order is set when the lock held is the order's charge (charge.go), not
// this key's: a request under another Idempotency-Key is charging the order.
type InFlightError struct {
	// RetryAfter is how long until the lock expires, rounded up to whole
	// seconds and at least one second, ready for a Retry-After header.
	RetryAfter time.Duration
	// Order: the holder is another key's request for the same order.
	Order bool
}

// Error implements error.
func (e *InFlightError) Error() string {
	if e.Order {
		return fmt.Sprintf("a charge of this order is in flight under another Idempotency-Key: retry after %s", e.RetryAfter)
	}
	return fmt.Sprintf("a request with this Idempotency-Key is in flight: retry after %s", e.RetryAfter)
}

// orderInFlight builds the error for the order's charge held for remaining
// more by another key's request.
func orderInFlight(remaining time.Duration) *InFlightError {
	e := inFlight(remaining)
	e.Order = true
	return e
}

// inFlight builds the error for a lock that is held for remaining more.
func inFlight(remaining time.Duration) *InFlightError {
	secs := (remaining + time.Second - 1) / time.Second
	return &InFlightError{RetryAfter: max(secs, 1) * time.Second}
}

// invalidBody wraps ErrInvalidBody with a message naming the field.
func invalidBody(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidBody, fmt.Sprintf(format, args...))
}
