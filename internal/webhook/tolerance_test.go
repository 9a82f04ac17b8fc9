package webhook_test

import (
	"errors"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/webhook"
)

// The tolerance window has two edges. A signature dated too far in the past
// is a captured request replayed later; one dated too far in the future is
// the same attack prepared in advance (or a provider clock that cannot be
// trusted), and a window open only at one end would accept it for as long as
// the attacker likes.
func TestVerifyToleratesClockSkewInBothDirectionsOnly(t *testing.T) {
	t.Parallel()
	secret := []byte("secret")
	body := []byte(`{"id":"evt_1"}`)
	now := time.Unix(1_800_000_000, 0)
	tol := webhook.DefaultTolerance
	for _, tt := range []struct {
		name    string
		signed  time.Duration // signature time relative to now
		wantErr error
	}{
		{"signed now", 0, nil},
		{"signed just inside the window, in the past", -tol + time.Second, nil},
		{"signed just inside the window, in the future", tol - time.Second, nil},
		{"signed at the past edge", -tol, nil},
		{"signed at the future edge", tol, nil},
		{"signed just past the window, in the past", -tol - time.Second, webhook.ErrSignatureExpired},
		{"signed just past the window, in the future", tol + time.Second, webhook.ErrSignatureExpired},
		{"signed a day ahead", 24 * time.Hour, webhook.ErrSignatureExpired},
		{"signed a year ahead", 365 * 24 * time.Hour, webhook.ErrSignatureExpired},
	} {
		t.Run(tt.name, func(t *testing.T) {
			header := webhook.Sign(secret, now.Add(tt.signed), body)
			err := webhook.Verify(secret, header, body, now, tol)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Verify = %v, want nil", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
