package httpapi

import (
	"net/http"

	"github.com/orderpaid/orderpaid/internal/refund"
)

// handleRefundCreate is POST /orders/{id}/refunds: the customer asks for the
// order's money back, under an Idempotency-Key (refund.Request). The answer
// is 201 once the refund is recorded; the money moves when the consumer of
// refund_requested has asked the gateway. A stored answer is written back
// byte for byte, with Idempotency-Replayed: true.
func (s *server) handleRefundCreate(w http.ResponseWriter, r *http.Request) {
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
	resp, err := refund.Request(r.Context(), s.Pool, id, r.Header.Get("Idempotency-Key"), body)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeStored(w, resp.Status, resp.Body, resp.Replayed)
}
