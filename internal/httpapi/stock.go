package httpapi

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/orderpaid/orderpaid/internal/stock"
)

type stockSetRequest struct {
	Available *int64 `json:"available"`
}

// handleStockSet is PUT /stock/{sku} {"available": N}: it sets the SKU's
// stock to N, an absolute value. A set, not an increment, so the call is
// itself idempotent: an admin tool that retries it, or sends it twice, leaves
// one value. (An "add 10 units" endpoint would need an idempotency key of its
// own.)
func (s *server) handleStockSet(w http.ResponseWriter, r *http.Request) {
	sku, err := skuParam(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var req stockSetRequest
	if err := readJSON(w, r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	if req.Available == nil || *req.Available < 0 || *req.Available > stock.MaxAvailable {
		s.problem(w, r, badRequest{fmt.Sprintf(`field "available" is required: the units left to sell, 0 to %d`, stock.MaxAvailable)})
		return
	}
	level, err := stock.Set(r.Context(), s.q, sku, *req.Available)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, level)
}

// handleStockGet is GET /stock/{sku}.
func (s *server) handleStockGet(w http.ResponseWriter, r *http.Request) {
	sku, err := skuParam(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	level, err := stock.Get(r.Context(), s.q, sku)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, level)
}

// skuParam reads the {sku} URL parameter.
func skuParam(r *http.Request) (string, error) {
	sku := chi.URLParam(r, "sku")
	if !stock.ValidSKU(sku) {
		return "", badRequest{`the SKU in the path must be 1 to 64 letters, digits, "_" or "-"`}
	}
	return sku, nil
}
