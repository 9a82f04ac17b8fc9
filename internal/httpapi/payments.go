package httpapi

import (
	"context"
	"net/http"

	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/webhook"
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
	resp, err := s.Payments.Pay(r.Context(), payment.Request{OrderID: id, Key: r.Header.Get("Idempotency-Key"), Body: body})
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeStored(w, resp.Status, resp.Body, resp.Replayed)
}

// handleWebhook answers 200 for a new event and for a duplicate (the body
// says which: "applied" or "already_applied"), and for an ignored event type.
// The signature is checked over the raw bytes, before any parsing.
//
// The Content-Type is not checked, unlike POST /orders: the signature proves
// the body, parsed strictly as JSON anyway, and a 415, which a provider does
// not retry, would lose a payment event for a header.
func (s *server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, webhook.MaxBodyBytes)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	res, err := s.Ingestor.Ingest(r.Context(), r.Header.Get(webhook.SignatureHeader), body)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
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
