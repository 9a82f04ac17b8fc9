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

// keyStore is what a provider keeps of the keys it has seen: Idempotency-Key
// -> the answer given.
type keyStore map[string]storedResponse

// once performs effect for key unless the key was seen before, in which case
// it returns the stored answer (replayed) or errKeyReused. effect does what
// the provider is asked (the charge, the refund, the e-mail) and returns the
// record of it, which becomes the answer's body, or an error when it refuses
// (a refund of an unknown charge, or of money already refunded): a refusal
// performs nothing and stores nothing, so the key stays free. The caller
// holds the provider's lock around once, so the look-up, the effect's checks,
// the effect and the stored answer happen under one hold: however many
// requests race with one key, exactly one performs the effect.
func (s keyStore) once(key string, req any, effect func() (any, error)) (resp storedResponse, replayed bool, err error) {
	fp, err := fingerprint(req)
	if err != nil {
		return storedResponse{}, false, err
	}
	if stored, ok := s[key]; ok {
		resp, err := stored.replay(fp)
		return resp, err == nil, err
	}
	record, err := effect()
	if err != nil {
		return storedResponse{}, false, err
	}
	body, err := json.Marshal(record)
	if err != nil {
		return storedResponse{}, false, fmt.Errorf("encode answer: %w", err)
	}
	resp = storedResponse{fingerprint: fp, status: http.StatusCreated, body: body}
	s[key] = resp
	return resp, false, nil
}

// forget drops every key of the store, as a provider does once its keys
// expire, and returns how many it dropped. The caller holds the provider's
// lock.
func (s keyStore) forget() int {
	n := len(s)
	clear(s)
	return n
}

// request is the body of a provider's effect endpoint, which checks itself.
type request interface{ validate() error }

// serveOnce serves a provider's effect endpoint (POST /charges, POST
// /refunds, POST /notifications): the scripted failure and delay (admit), the
// Idempotency-Key, the strict body, then perform, which looks the key up and
// performs the effect once. The delay comes after the effect: a slow answer
// is a client timeout after the effect, the case the caller's retry with the
// same key must survive.
func serveOnce[R request](w http.ResponseWriter, r *http.Request, admit func() (time.Duration, error), perform func(key string, req R) (storedResponse, bool, error)) {
	delay, err := admit()
	if err != nil {
		writeError(w, err)
		return
	}
	key := r.Header.Get(IdempotencyKeyHeader)
	if key == "" {
		writeError(w, errMissingKey)
		return
	}
	var req R
	if err := decodeStrict(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := req.validate(); err != nil {
		writeError(w, err)
		return
	}
	resp, replayed, err := perform(key, req)
	if err != nil {
		writeError(w, err)
		return
	}
	sleep(r.Context(), delay)
	resp.write(w, replayed)
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
