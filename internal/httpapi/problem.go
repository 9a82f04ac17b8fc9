package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/refund"
	"github.com/orderpaid/orderpaid/internal/stock"
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
// mistakes get a 4xx whose detail names the field and what to do, and nothing
// else: never the chain of calls that led there, an internal address, a
// provider's raw answer or a Go type (publicDetail). Anything unexpected is
// logged and answered 500 without internals.
func (s *server) problem(w http.ResponseWriter, r *http.Request, err error) {
	p := Problem{Type: "about:blank"}
	var br badRequest
	var inFlight *payment.InFlightError
	switch {
	case errors.As(err, &br):
		p.Status, p.Title, p.Detail = http.StatusBadRequest, "Bad request", br.msg
	case errors.Is(err, webhook.ErrMalformed):
		p.Status, p.Title, p.Detail = http.StatusBadRequest, "Bad request", publicDetail(err, webhook.ErrMalformed)
	case errors.Is(err, payment.ErrInvalidBody):
		p.Status, p.Title, p.Detail = http.StatusBadRequest, "Bad request", publicDetail(err, payment.ErrInvalidBody)
	case errors.Is(err, refund.ErrInvalidBody):
		p.Status, p.Title, p.Detail = http.StatusBadRequest, "Bad request", publicDetail(err, refund.ErrInvalidBody)
	case errors.Is(err, refund.ErrNotRefundable):
		p.Status, p.Title, p.Detail = http.StatusConflict, "Order not refundable", publicDetail(err, refund.ErrNotRefundable)+
			": only a paid order can be refunded"
	case errors.Is(err, refund.ErrAlreadyRequested):
		p.Status, p.Title, p.Detail = http.StatusConflict, "Refund already requested", publicDetail(err, refund.ErrAlreadyRequested)+
			": GET /orders/{id} shows when it is done"
	case errors.Is(err, payment.ErrKeyMissing):
		p.Status, p.Title, p.Detail = http.StatusBadRequest, "Bad request", publicDetail(err, payment.ErrKeyMissing)
	case signatureError(err) != nil:
		p.Status, p.Title = http.StatusUnauthorized, "Invalid webhook signature"
		p.Detail = signatureError(err).Error() + `: send Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> made with the shared secret`
	case errors.Is(err, stock.ErrNotFound):
		p.Status, p.Title, p.Detail = http.StatusNotFound, "Unknown SKU", "no stock is set for this SKU: set it with PUT /stock/{sku}"
	case errors.Is(err, errBadItems):
		p.Status, p.Title, p.Detail = http.StatusUnprocessableEntity, "Unprocessable request", publicDetail(err, errBadItems)
	case errors.Is(err, order.ErrUnknownSKU):
		p.Status, p.Title, p.Detail = http.StatusUnprocessableEntity, "Unprocessable request", publicDetail(err, order.ErrUnknownSKU)
	case errors.Is(err, order.ErrNotFound):
		p.Status, p.Title, p.Detail = http.StatusNotFound, "Order not found", "no order has this id"
	case errors.Is(err, errRouteNotFound):
		p.Status, p.Title = http.StatusNotFound, "Not found"
	case errors.Is(err, errMethodNotAllowed):
		p.Status, p.Title = http.StatusMethodNotAllowed, "Method not allowed"
	case errors.As(err, &inFlight):
		p.Status, p.Title, p.Detail = http.StatusConflict, "A request with this Idempotency-Key is in flight", inFlight.Error()
		if inFlight.Order {
			p.Title = "A charge of this order is in flight"
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(inFlight.RetryAfter.Seconds())))
	case errors.Is(err, errUnsupportedMediaType):
		// RFC 9110, section 15.5.16: Accept names the one media type read.
		w.Header().Set("Accept", "application/json")
		p.Status, p.Title, p.Detail = http.StatusUnsupportedMediaType, "Unsupported media type", errUnsupportedMediaType.Error()
	case errors.Is(err, errBodyTooLarge):
		p.Status, p.Title = http.StatusRequestEntityTooLarge, "Request body too large"
	case errors.Is(err, webhook.ErrAmountMismatch):
		p.Status, p.Title, p.Detail = http.StatusUnprocessableEntity, "Unprocessable request", publicDetail(err, webhook.ErrAmountMismatch)
	case errors.Is(err, payment.ErrKeyMismatch):
		p.Status, p.Title, p.Detail = http.StatusUnprocessableEntity, "Unprocessable request", payment.ErrKeyMismatch.Error()+
			": use a new key for a new request"
	case errors.Is(err, payment.ErrOutcomeUnknown):
		s.Logger.WarnContext(r.Context(), "charge outcome unknown", "path", r.URL.Path, "err", err)
		p.Type, p.Status, p.Title = payment.ProblemOutcomeUnknown, http.StatusConflict, "Outcome of an earlier attempt unknown"
		p.Detail = payment.ErrOutcomeUnknown.Error() + ": nothing was charged now; retry later with the same Idempotency-Key"
		w.Header().Set("Retry-After", "5")
	case errors.Is(err, payment.ErrGatewayUnavailable):
		// The cause (the gateway's address, its raw answer) is ours to log,
		// not the client's to read.
		s.Logger.WarnContext(r.Context(), "payment gateway unavailable", "path", r.URL.Path, "err", err)
		p.Status, p.Title = http.StatusBadGateway, "Payment gateway unavailable, retry with the same Idempotency-Key"
		p.Detail = "the payment gateway gave no definitive answer; nothing was stored under your key, so a retry with the same key runs again and cannot charge twice"
	default:
		s.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		p.Status, p.Title = http.StatusInternalServerError, "Internal server error"
	}
	p.Detail = truncate(p.Detail, maxDetail)
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// signatureError is the signature sentinel in err's chain, or nil.
func signatureError(err error) error {
	for _, sentinel := range []error{webhook.ErrSignatureMissing, webhook.ErrSignatureMalformed,
		webhook.ErrSignatureExpired, webhook.ErrSignatureMismatch} {
		if errors.Is(err, sentinel) {
			return sentinel
		}
	}
	return nil
}

// maxDetail bounds a problem's detail: whatever input it quotes, the answer
// stays small.
const maxDetail = 300

// publicDetail is the part of err's message from sentinel on: the sentinel's
// own text and the reason wrapped after it ("invalid request body: field
// ... must be ..."), without the calls that wrapped it on the way up
// ("claim idempotency key for order ...: ").
func publicDetail(err, sentinel error) string {
	msg, want := err.Error(), sentinel.Error()
	if i := strings.Index(msg, want); i >= 0 {
		return msg[i:]
	}
	return want
}

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
