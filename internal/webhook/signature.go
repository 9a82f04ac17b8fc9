package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries the provider's signature.
const SignatureHeader = "Webhook-Signature"

// DefaultTolerance is how far the signed timestamp may be from our clock.
// Older signatures are refused, so a captured request cannot be replayed later.
const DefaultTolerance = 5 * time.Minute

// Errors returned by Verify. All of them mean "answer 401 and write nothing".
var (
	ErrSignatureMissing   = errors.New("signature header is missing")
	ErrSignatureMalformed = errors.New("signature header is malformed")
	ErrSignatureExpired   = errors.New("signature timestamp is outside the tolerance window")
	ErrSignatureMismatch  = errors.New("signature does not match the body")
)

// Sign returns the header value for body signed at ts:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>".
func Sign(secret []byte, ts time.Time, body []byte) string {
	t := strconv.FormatInt(ts.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac(secret, t, body))
}

// Verify checks header against body. The HMAC covers the timestamp and the raw
// body, the timestamp must be within tolerance of now, and the comparison is
// constant-time (hmac.Equal), so the check leaks nothing about the expected value.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if header == "" {
		return ErrSignatureMissing
	}
	var t string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrSignatureMalformed
		}
		switch k {
		case "t":
			t = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil {
				return ErrSignatureMalformed
			}
			sigs = append(sigs, sig)
		}
	}
	if t == "" || len(sigs) == 0 {
		return ErrSignatureMalformed
	}
	secs, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return ErrSignatureMalformed
	}
	if age := now.Sub(time.Unix(secs, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("%w (signed %s ago)", ErrSignatureExpired, age.Round(time.Second))
	}
	want := mac(secret, t, body)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return ErrSignatureMismatch
}

func mac(secret []byte, t string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(t))
	h.Write([]byte("."))
	h.Write(body)
	return h.Sum(nil)
}
