package httpapi

import "net/http"

// handleRefundCreate is POST /orders/{id}/refunds.
func (s *server) handleRefundCreate(w http.ResponseWriter, r *http.Request) {
	s.problem(w, r, errRouteNotFound)
}
