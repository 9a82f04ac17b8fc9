package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ErrRejected: the provider refused for good, a 4xx other than the four
// that mean "not now" (NotNowError).
var ErrRejected = errors.New("notification rejected by the provider")

// ErrNoKey is SendOrderConfirmed's answer to an empty Idempotency-Key: the
// call is not made, since a retry of it could send the e-mail twice.
var ErrNoKey = errors.New("notification without an idempotency key: not sent")

// MaxRetryAfter caps a provider's Retry-After; longer pauses are left to the
// broker's redelivery.
const MaxRetryAfter = 5 * time.Second

// NotNowError is a provider answer meaning "not now", not "no": the same
// request and key may succeed later. It is 408, 409 (this key in flight), 425,
// 429 and every 5xx; taken as a refusal, it would poison the message and lose
// the e-mail until an operator replays it.
type NotNowError struct {
	Status     int           // the provider's HTTP status
	RetryAfter time.Duration // its Retry-After, capped at MaxRetryAfter; 0 if unsaid
}

func (e *NotNowError) Error() string {
	return fmt.Sprintf("notification provider answered %d, not now: retry after %s", e.Status, e.RetryAfter)
}

// notNow reports whether an HTTP error status means "not now" rather than "no".
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

// WaitRetryAfter waits for a NotNowError's RetryAfter or until ctx ends; for
// any other error it returns at once.
func WaitRetryAfter(ctx context.Context, err error) {
	var nn *NotNowError
	if !errors.As(err, &nn) || nn.RetryAfter <= 0 {
		return
	}
	select {
	case <-time.After(nn.RetryAfter):
	case <-ctx.Done():
	}
}
