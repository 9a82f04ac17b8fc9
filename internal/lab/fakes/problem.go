package fakes

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// maxBodyBytes bounds every request body the fakes read.
const maxBodyBytes = 1 << 20

// Errors the handlers return; writeError maps each to its status code.
var (
	errBadRequest = errors.New("bad request")
	errMissingKey = errors.New("missing Idempotency-Key header: the provider cannot deduplicate without it")
	errKeyReused  = errors.New("this Idempotency-Key was already used with a different request body")
	errNotFound   = errors.New("not found")
	// errRefunded: the money asked back was already refunded, under another key.
	errRefunded = errors.New("already refunded")
)

// problem is an RFC 9457 problem details object.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// writeError is the one function that maps an error to an HTTP status code.
// It answers application/problem+json; unknown errors are 500. An
// injectedFailure answers its own status, with its Retry-After.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var failed injectedFailure
	var refused refundRefused
	switch {
	case errors.Is(err, errBadRequest), errors.Is(err, errMissingKey):
		status = http.StatusBadRequest
	case errors.Is(err, errKeyReused):
		status = http.StatusUnprocessableEntity
	case errors.As(err, &failed):
		status = failed.status
		if failed.retryAfterS > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(failed.retryAfterS))
		}
	case errors.As(err, &refused):
		status = refused.status
	case errors.Is(err, errNotFound):
		status = http.StatusNotFound
	case errors.Is(err, errRefunded):
		status = http.StatusConflict
	}
	body, _ := json.Marshal(problem{ // a struct of strings and an int always encodes
		Type:   "about:blank",
		Title:  cmp.Or(http.StatusText(status), "Provider error"),
		Status: status,
		Detail: err.Error(),
	})
	writeBody(w, status, "application/problem+json", body)
}

// badRequest wraps err so that writeError answers 400.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

// writeJSON answers status with v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, fmt.Errorf("encode response: %w", err))
		return
	}
	writeBody(w, status, "application/json", body)
}

// writeBody answers status with body as it is. Stored idempotent responses
// go through here too, so a replay is byte for byte the original answer.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client went away; nothing left to tell it
}

// decodeStrict decodes the request body into v, refusing unknown fields,
// trailing data and bodies over maxBodyBytes. Errors wrap errBadRequest; an
// empty body also wraps io.EOF, so callers with an optional body can accept it.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty body: %w", errBadRequest, err)
		}
		return fmt.Errorf("%w: decode JSON body: %w", errBadRequest, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("unexpected data after the JSON body")
	}
	return nil
}
