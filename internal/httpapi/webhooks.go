package httpapi

import (
	"net/http"

	"github.com/orderpaid/orderpaid/internal/webhook"
)

// handleWebhook answers 200 for a new event and for a duplicate (the body
// says which: "applied" or "already_applied"), and for an ignored event type.
// The signature is checked over the raw bytes, before any parsing.
//
// The Content-Type is not checked, unlike POST /orders. A provider sends
// application/json anyway; what proves that the body is the provider's is
// the signature, and the body is parsed as JSON (strictly) whatever the
// header says. A 415 would only turn a delivery we can verify and read into
// a 4xx, which a provider does not retry: a payment event lost for a header.
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
