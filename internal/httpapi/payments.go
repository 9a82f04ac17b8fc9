package httpapi

import (
	"context"
	"net/http"

	"github.com/orderpaid/orderpaid/internal/payment"
)

// Payer charges an order under an Idempotency-Key (payment.Service).
type Payer interface {
	Pay(ctx context.Context, req payment.Request) (payment.Response, error)
}

// handlePaymentCreate is POST /orders/{id}/payments. The stored response of a
// key is written back byte for byte, with Idempotency-Replayed: true.
func (s *server) handlePaymentCreate(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	body, err := readBody(w, r, maxJSONBody)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	resp, err := s.Payments.Pay(r.Context(), payment.Request{
		OrderID: id, Key: r.Header.Get("Idempotency-Key"), Body: body,
	})
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeStored(w, resp.Status, resp.Body, resp.Replayed)
}

// replayedHeader marks an answer a request did not make: the stored answer
// of an earlier request with the same Idempotency-Key, written back. A
// client that gets it knows this request changed nothing; the first answer
// never carries it.
const replayedHeader = "Idempotency-Replayed"

// writeStored writes an answer kept under an Idempotency-Key (a payment's,
// a refund's) byte for byte, with Idempotency-Replayed: true when this
// request replayed it.
func writeStored(w http.ResponseWriter, status int, body []byte, replayed bool) {
	w.Header().Set("Content-Type", contentType(body, status))
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func contentType(body []byte, status int) string {
	if status >= 400 {
		return "application/problem+json"
	}
	return "application/json"
}
