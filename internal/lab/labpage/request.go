package labpage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/platform/strictjson"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// What the page reads of a request and how it answers, as the API does for
// its own routes (internal/httpapi, decode.go and problem.go): the same
// limits, the same strict JSON, the same refusals.

// maxJSONBody bounds every JSON request body.
const maxJSONBody = 64 << 10

// readBody reads at most limit bytes; a larger body is refused with 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, labError{status: http.StatusRequestEntityTooLarge, title: "Request body too large"}
	}
	if err != nil {
		return nil, badRequest(fmt.Sprintf("read body: %v", err))
	}
	return b, nil
}

// readJSON reads a JSON request body of at most maxJSONBody bytes into v,
// strictly (strictjson.Decode: member names exactly as v's json tags and
// each once, valid UTF-8 and no NUL in strings, nothing after the object).
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	if err := strictjson.Decode(body, v); err != nil {
		return badRequest(err.Error())
	}
	return nil
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// requireJSON refuses with 415 a control whose Content-Type is not
// application/json (parameters such as charset=utf-8 are fine; a charset
// other than UTF-8 is not), or that has none. A browser sends text/plain,
// form types or no type at all cross-site without asking first (a CORS
// "simple request"); it must ask (preflight) for application/json, and
// the API never says yes.
func (p *Page) requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strictjson.IsMediaType(r.Header.Get("Content-Type")) {
			// RFC 9110, section 15.5.16: Accept names the one media type read.
			w.Header().Set("Accept", "application/json")
			p.problem(w, r, labError{http.StatusUnsupportedMediaType, "Unsupported media type",
				`send the body as JSON, with "Content-Type: application/json"`})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// orderID reads the {id} URL parameter.
func orderID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		return uuid.Nil, badRequest(fmt.Sprintf("order id %q is not a UUID", chi.URLParam(r, "id")))
	}
	return id, nil
}

// withOrderID puts the {id} of an order route on the request's span and on
// every span under it, as the API's order routes do.
func withOrderID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, err := uuid.Parse(chi.URLParam(r, "id")); err == nil {
			r = r.WithContext(telemetry.WithOrderID(r.Context(), id.String()))
		}
		next.ServeHTTP(w, r)
	})
}

// badRequest is a client mistake the page found itself; msg names the
// field.
func badRequest(msg string) labError { return labError{http.StatusBadRequest, "Bad request", msg} }

// getOrder is order.Get, with the API's answer to an order that is not
// there (404).
func (p *Page) getOrder(ctx context.Context, id uuid.UUID) (queries.Order, error) {
	o, err := order.Get(ctx, p.q, id)
	if errors.Is(err, order.ErrNotFound) {
		return o, labError{http.StatusNotFound, "Order not found", "no order has this id"}
	}
	return o, err
}

// maxDetail bounds a problem's detail, as the API's problems are.
const maxDetail = 300

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
