package httpapi

import (
	"net/http"

	"github.com/orderpaid/orderpaid/internal/webhook"
)

// handleWebhook answers 200 for a new event and for a duplicate (the body
// says which: "applied" or "already_applied"), and for an ignored event type.
// The signature is checked over the raw bytes, before any parsing.
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
