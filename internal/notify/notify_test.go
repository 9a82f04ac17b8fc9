package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
)

// provider starts the fake notification provider behind a real HTTP server
// and returns it with a client for it.
func provider(t *testing.T) (*fakes.Notifier, *Client) {
	t.Helper()
	n := fakes.NewNotifier()
	srv := httptest.NewServer(fakes.New(fakes.NewGateway(fakes.GatewayConfig{}), n))
	t.Cleanup(srv.Close)
	return n, NewClient(srv.URL, nil)
}

// Each provider status is "no" or "not now", as the provider really sends
// it: only a refusal is ErrRejected; the rest keep the Retry-After.
func TestSendClassifiesProviderAnswers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status     int
		retryAfter int // seconds the provider sends; 0: no header
		wantNotNow bool
	}{
		{http.StatusTooManyRequests, 1, true},
		{http.StatusTooManyRequests, 0, true},
		{http.StatusRequestTimeout, 0, true},
		{http.StatusConflict, 2, true},
		{http.StatusTooEarly, 0, true},
		{http.StatusInternalServerError, 0, true},
		{http.StatusServiceUnavailable, 3, true},
		{http.StatusTooManyRequests, 3600, true}, // capped at MaxRetryAfter
		{http.StatusBadRequest, 0, false},
		{http.StatusUnauthorized, 0, false},
		{http.StatusForbidden, 0, false},
		{http.StatusNotFound, 0, false},
		{http.StatusUnprocessableEntity, 1, false},
	} {
		t.Run(fmt.Sprintf("%d Retry-After %d", tt.status, tt.retryAfter), func(t *testing.T) {
			t.Parallel()
			n, c := provider(t)
			if err := n.SetControl(fakes.NotifierControl{FailNext: 1, FailStatus: tt.status, RetryAfterS: tt.retryAfter}); err != nil {
				t.Fatal(err)
			}
			_, err := c.SendOrderConfirmed(t.Context(), "k", uuid.New())
			var nn *NotNowError
			switch {
			case tt.wantNotNow && !errors.As(err, &nn):
				t.Fatalf("err = %v, want a NotNowError", err)
			case tt.wantNotNow && (nn.Status != tt.status || nn.RetryAfter != min(time.Duration(tt.retryAfter)*time.Second, MaxRetryAfter)):
				t.Errorf("NotNowError = %+v, want status %d, Retry-After %ds capped at %s", nn, tt.status, tt.retryAfter, MaxRetryAfter)
			case tt.wantNotNow && errors.Is(err, ErrRejected):
				t.Errorf("err = %v is also ErrRejected", err)
			case !tt.wantNotNow && (!errors.Is(err, ErrRejected) || errors.As(err, &nn)):
				t.Errorf("err = %v, want ErrRejected only", err)
			}
		})
	}
}

// A retry after "not now" carries the same key: the provider sends once,
// and answers later retries from its store.
func TestRetryAfterNotNowSendsOnce(t *testing.T) {
	t.Parallel()
	n, c := provider(t)
	if err := n.SetControl(fakes.NotifierControl{FailNext: 2, FailStatus: http.StatusTooManyRequests, RetryAfterS: 1}); err != nil {
		t.Fatal(err)
	}
	order := uuid.New()
	var answers []Sent
	for i := range 4 {
		sent, err := c.SendOrderConfirmed(t.Context(), "msg-1", order)
		var nn *NotNowError
		if i < 2 && !errors.As(err, &nn) || i >= 2 && err != nil {
			t.Fatalf("attempt %d: err = %v", i+1, err)
		}
		if err == nil {
			answers = append(answers, sent)
		}
	}
	if got := n.Notifications(); len(got) != 1 || got[0].IdempotencyKey != "msg-1" {
		t.Fatalf("notifications = %+v, want one, keyed msg-1", got)
	}
	if answers[0].Replayed || !answers[1].Replayed || answers[0].ID != answers[1].ID {
		t.Errorf("answers = %+v, want one send, then the same one replayed", answers)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"1", time.Second},
		{"0", 0},
		{"-3", 0},
		{"3600", MaxRetryAfter},
		{now.Add(2 * time.Second).Format(http.TimeFormat), 2 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"soon", 0},
	} {
		if got := retryAfter(tt.header, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tt.header, got, tt.want)
		}
	}
}

// WaitRetryAfter waits what the provider asked, and no longer than the
// caller's context allows.
func TestWaitRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		err     error
		ctx     time.Duration // the caller's deadline
		atLeast time.Duration
		atMost  time.Duration
	}{
		{"as asked", &NotNowError{Status: 429, RetryAfter: 300 * time.Millisecond}, time.Minute, 300 * time.Millisecond, 2 * time.Second},
		{"bounded by the context", &NotNowError{Status: 429, RetryAfter: MaxRetryAfter}, 100 * time.Millisecond, 100 * time.Millisecond, 2 * time.Second},
		{"no Retry-After", &NotNowError{Status: 503}, time.Minute, 0, 100 * time.Millisecond},
		{"a refusal", ErrRejected, time.Minute, 0, 100 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), tt.ctx)
			defer cancel()
			start := time.Now()
			WaitRetryAfter(ctx, tt.err)
			if d := time.Since(start); d < tt.atLeast || d > tt.atMost {
				t.Errorf("waited %s, want %s to %s", d, tt.atLeast, tt.atMost)
			}
		})
	}
}

// The provider key is the guard: with it (MessageKey), two calls for one
// message send once. Its mistake (FreshKey, which the lab wires into the
// consumer with --without provider-key) gives each call a fresh key, and the
// provider sends twice: the mistake the workshop shows. An empty key is
// refused before any call.
func TestProviderKey(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		key      func(messageID string) string
		wantSent int
	}{
		{"guarded", MessageKey, 1},
		{"provider key off", FreshKey, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, c := provider(t)
			order := uuid.New()
			for range 2 {
				if _, err := c.SendOrderConfirmed(t.Context(), tt.key("msg-1"), order); err != nil {
					t.Fatal(err)
				}
			}
			if got := n.Notifications(); len(got) != tt.wantSent {
				t.Errorf("notifications = %+v, want %d", got, tt.wantSent)
			}
		})
	}
	t.Run("empty key", func(t *testing.T) {
		t.Parallel()
		n, c := provider(t)
		if _, err := c.SendOrderConfirmed(t.Context(), "", uuid.New()); !errors.Is(err, ErrNoKey) {
			t.Errorf("err = %v, want ErrNoKey", err)
		}
		if got := n.Notifications(); len(got) != 0 {
			t.Errorf("notifications = %+v, want none", got)
		}
	})
}

// MessageKey is the identity: every delivery and retry of a message carries
// the message id as its key. FreshKey, its mistake, answers a different,
// non-empty key at each call, whatever the message.
func TestMessageKeyAndFreshKey(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"msg-1", uuid.NewString()} {
		if got := MessageKey(id); got != id {
			t.Errorf("MessageKey(%q) = %q, want the message id", id, got)
		}
		if MessageKey(id) != MessageKey(id) {
			t.Errorf("MessageKey(%q) differs between calls", id)
		}
	}
	seen := map[string]bool{}
	for range 3 {
		k := FreshKey("msg-1")
		if k == "" || k == "msg-1" {
			t.Fatalf("FreshKey(msg-1) = %q, want a fresh non-empty key", k)
		}
		if seen[k] {
			t.Fatalf("FreshKey(msg-1) = %q twice, want a different key each call", k)
		}
		seen[k] = true
	}
}
