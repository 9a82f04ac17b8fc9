package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/platform/strictjson"
)

// maxJSONBody bounds every JSON request body.
const maxJSONBody = 64 << 10

// readBody reads at most limit bytes; a larger body is errBodyTooLarge.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("%w: the limit is %d bytes", errBodyTooLarge, limit)
	}
	if err != nil {
		return nil, badRequest{fmt.Sprintf("read body: %v", err)}
	}
	return b, nil
}

// decodeStrict parses body into v with strictjson.Decode; a refusal is a
// badRequest naming the field.
func decodeStrict(body []byte, v any) error {
	if err := strictjson.Decode(body, v); err != nil {
		return badRequest{err.Error()}
	}
	return nil
}

// readJSON reads a JSON body of at most maxJSONBody bytes into v, strictly.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}

// What requireJSON does with a request that has no Content-Type.
const (
	untypedRefused    = false
	untypedReadAsJSON = true
)

// errUnsupportedMediaType: the body is declared as something other than JSON.
var errUnsupportedMediaType = errors.New(`send the body as JSON, with "Content-Type: application/json"`)

// requireJSON refuses with 415 a Content-Type other than application/json
// (strictjson.IsMediaType); when untypedOK, none at all passes too.
//
// A browser sends text/plain, form types or no type cross-site without a
// CORS preflight, but must ask first for application/json: on a route that
// needs no other header, such as POST /orders, insisting on it keeps any web
// page from creating orders in a visitor's browser.
func (s *server) requireJSON(untypedOK bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ct := r.Header.Get("Content-Type")
			if ct == "" && untypedOK || strictjson.IsMediaType(ct) {
				next.ServeHTTP(w, r)
				return
			}
			s.problem(w, r, errUnsupportedMediaType)
		})
	}
}

// orderID reads the {id} URL parameter.
func orderID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		return uuid.Nil, badRequest{fmt.Sprintf("order id %q is not a UUID", chi.URLParam(r, "id"))}
	}
	return id, nil
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
