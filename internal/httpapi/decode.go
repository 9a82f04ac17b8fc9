package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
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

// decodeStrict parses body into v, refusing unknown fields and trailing data,
// with an error that names the offending field.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return badRequest{fmt.Sprintf("field %q has the wrong type (want %s)", typeErr.Field, typeErr.Type)}
		}
		return badRequest{fmt.Sprintf("malformed JSON: %v", err)}
	}
	if dec.More() {
		return badRequest{"malformed JSON: trailing data after the object"}
	}
	return nil
}

// orderID reads the {id} URL parameter.
func orderID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		return uuid.Nil, badRequest{fmt.Sprintf("order id %q is not a UUID", chi.URLParam(r, "id"))}
	}
	return id, nil
}
