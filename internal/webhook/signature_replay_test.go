package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/webhook"
)

// The HMAC covers the timestamp, not only the body. The tolerance window
// refuses an old timestamp, but if the timestamp were not signed an attacker
// holding a captured request would simply write a fresh one next to the old
// signature and replay it for ever. A signature valid for (t1, body) must be
// refused for (t2, body), even with t2 well inside the window.
func TestVerifyRefusesASignatureReplayedWithAFreshTimestamp(t *testing.T) {
	t.Parallel()
	secret := []byte("secret")
	body := []byte(`{"id":"evt_1","type":"payment.succeeded"}`)
	captured := time.Unix(1_800_000_000, 0)
	replayed := captured.Add(time.Hour) // the capture itself has long expired

	sig := v1Of(t, webhook.Sign(secret, captured, body))
	forged := "t=" + strconv.FormatInt(replayed.Unix(), 10) + ",v1=" + sig

	err := webhook.Verify(secret, forged, body, replayed, webhook.DefaultTolerance)
	if !errors.Is(err, webhook.ErrSignatureMismatch) {
		t.Fatalf("Verify(captured signature, fresh timestamp) = %v, want %v", err, webhook.ErrSignatureMismatch)
	}
}

// The signed payload is "<t>.<body>", as the provider documents it: a header
// built independently of the package's own mac() is accepted, so Sign and
// Verify cannot drift together into signing something else (the body alone,
// say) while still agreeing with each other.
func TestSignMatchesTheDocumentedSignedPayload(t *testing.T) {
	t.Parallel()
	secret := []byte("secret")
	body := []byte(`{"id":"evt_1"}`)
	ts := time.Unix(1_800_000_000, 0)

	h := hmac.New(sha256.New, secret)
	h.Write([]byte("1800000000." + string(body)))
	want := "t=1800000000,v1=" + hex.EncodeToString(h.Sum(nil))

	if got := webhook.Sign(secret, ts, body); got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	if err := webhook.Verify(secret, want, body, ts, webhook.DefaultTolerance); err != nil {
		t.Fatalf("Verify(independently signed header) = %v, want nil", err)
	}
}

// v1Of returns the v1 value of a signature header.
func v1Of(t *testing.T, header string) string {
	t.Helper()
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(part, "v1="); ok {
			return v
		}
	}
	t.Fatalf("no v1 in %q", header)
	return ""
}
