package fakes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Headers of the idempotency protocol both fakes speak, as real providers
// (Stripe, Adyen, most e-mail APIs) do.
const (
	// IdempotencyKeyHeader carries the caller's key. The caller chooses it
	// and sends the same key on every retry of one logical request.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is set to "true" on an answer repeated from the store:
	// the effect was performed by an earlier request, not by this one.
	ReplayedHeader = "Idempotent-Replayed"
)

// storedResponse is what a provider keeps per Idempotency-Key: the request's
// fingerprint, to refuse the key when it comes back with another body, and the
// exact answer it gave, to repeat it byte for byte to every retry.
//
// The provider looks the key up and records the effect under one mutex, so
// of any number of concurrent requests with one key exactly one performs the
// effect; the others find its stored answer.
type storedResponse struct {
	fingerprint string
	status      int
	body        []byte
}

// fingerprint identifies a decoded request body. It is computed from the
// decoded struct, not the raw bytes, so whitespace and field order do not
// make two equal requests different.
func fingerprint(req any) (string, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("fingerprint request: %w", err)
	}
	return string(b), nil
}

// replay returns the stored answer for a repeated key, or errKeyReused when
// the key comes with a request other than the one it was first used for.
func (s storedResponse) replay(fp string) (storedResponse, error) {
	if fp != s.fingerprint {
		return storedResponse{}, errKeyReused
	}
	return s, nil
}

// write sends the stored answer; replayed marks it with ReplayedHeader.
func (s storedResponse) write(w http.ResponseWriter, replayed bool) {
	if replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	writeBody(w, s.status, "application/json", s.body)
}

// newID returns prefix followed by 24 random hex digits, e.g. "ch_3f9a...".
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error (Go 1.24+)
	return prefix + hex.EncodeToString(b[:])
}

// sleep waits for d, or less if ctx ends first (the client hung up).
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
