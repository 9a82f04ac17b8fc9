package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Problem is an RFC 9457 problem detail.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// badRequest is a client mistake the handler found itself; its message names
// the field.
type badRequest struct{ msg string }

func (e badRequest) Error() string { return e.msg }

var (
	errRouteNotFound    = errors.New("no such route")
	errMethodNotAllowed = errors.New("method not allowed on this route")
	errBodyTooLarge     = errors.New("request body too large")
)

// problem is the one function that turns an error into an HTTP status. Client
// mistakes get a 4xx naming the problem; anything unexpected is logged and
// answered 500 without internals.
func (s *server) problem(w http.ResponseWriter, r *http.Request, err error) {
	p := Problem{Type: "about:blank", Detail: err.Error()}
	var br badRequest
	var inFlight *payment.InFlightError
	switch {
	case errors.As(err, &br), errors.Is(err, webhook.ErrMalformed),
		errors.Is(err, payment.ErrInvalidBody), errors.Is(err, payment.ErrKeyMissing):
		p.Status, p.Title = http.StatusBadRequest, "Bad request"
	case errors.Is(err, webhook.ErrSignatureMissing), errors.Is(err, webhook.ErrSignatureMalformed),
		errors.Is(err, webhook.ErrSignatureExpired), errors.Is(err, webhook.ErrSignatureMismatch):
		p.Status, p.Title = http.StatusUnauthorized, "Invalid webhook signature"
	case errors.Is(err, order.ErrNotFound):
		p.Status, p.Title = http.StatusNotFound, "Order not found"
	case errors.Is(err, errRouteNotFound):
		p.Status, p.Title = http.StatusNotFound, "Not found"
	case errors.Is(err, errMethodNotAllowed):
		p.Status, p.Title = http.StatusMethodNotAllowed, "Method not allowed"
	case errors.As(err, &inFlight):
		p.Status, p.Title = http.StatusConflict, "A request with this Idempotency-Key is in flight"
		if inFlight.Order {
			p.Title = "A charge of this order is in flight"
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(inFlight.RetryAfter.Seconds())))
	case errors.Is(err, errBodyTooLarge):
		p.Status, p.Title = http.StatusRequestEntityTooLarge, "Request body too large"
	case errors.Is(err, webhook.ErrAmountMismatch), errors.Is(err, payment.ErrKeyMismatch):
		p.Status, p.Title = http.StatusUnprocessableEntity, "Unprocessable request"
	case errors.Is(err, payment.ErrGatewayUnavailable):
		p.Status, p.Title = http.StatusBadGateway, "Payment gateway unavailable, retry with the same Idempotency-Key"
	default:
		s.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		p.Status, p.Title, p.Detail = http.StatusInternalServerError, "Internal server error", ""
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
