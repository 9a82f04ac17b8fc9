package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ErrRejected means the provider refused the request for good: a 4xx other
// than the four that mean "not now" (see NotNowError). Sending it again will
// not help.
var ErrRejected = errors.New("notification rejected by the provider")

// ErrNoKey is SendOrderConfirmed's answer to an empty Idempotency-Key: the
// call is not made, since a retry of it could send the e-mail twice.
var ErrNoKey = errors.New("notification without an idempotency key: not sent")

// MaxRetryAfter caps the Retry-After a provider asks for: a caller waits at
// most this long before trying again, and a longer pause is left to the
// broker's redelivery.
const MaxRetryAfter = 5 * time.Second

// NotNowError is a provider answer that means "not now", not "no": nothing
// was sent for this key yet, or it was and the provider cannot say so at
// the moment, and the same request with the same key may succeed later. It
// is 408 Request Timeout, 409 Conflict (a request with this key is still in
// flight), 425 Too Early, 429 Too Many Requests and every 5xx. Treating one
// as a refusal poisons the message and loses the e-mail until an operator
// replays it.
type NotNowError struct {
	// Status is the provider's HTTP status.
	Status int
	// RetryAfter is how long the provider asked the caller to wait (its
	// Retry-After header, capped at MaxRetryAfter); 0 when it did not say.
	RetryAfter time.Duration
}

func (e *NotNowError) Error() string {
	return fmt.Sprintf("notification provider answered %d, not now: retry after %s", e.Status, e.RetryAfter)
}

// notNow reports whether an HTTP error status means "not now" rather than
// "no". The four 4xx are about the moment, not the request.
func notNow(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date,
// capped at MaxRetryAfter; 0 when it is absent or unreadable.
func retryAfter(h string, now time.Time) time.Duration {
	var d time.Duration
	if s, err := strconv.Atoi(h); err == nil {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// WaitRetryAfter waits as long as err's provider asked (a NotNowError's
// RetryAfter), or until ctx ends, whichever comes first. It returns at once
// for any other error.
func WaitRetryAfter(ctx context.Context, err error) {
	var nn *NotNowError
	if !errors.As(err, &nn) || nn.RetryAfter <= 0 {
		return
	}
	t := time.NewTimer(nn.RetryAfter)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
