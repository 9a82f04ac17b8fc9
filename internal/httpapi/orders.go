package httpapi

import (
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/db"
	"github.com/orderpaid/orderpaid/internal/order"
)

type orderCreateRequest struct {
	CustomerID  string `json:"customer_id"`
	AffiliateID string `json:"affiliate_id"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
}

var currencyRe = regexp.MustCompile(`^[A-Z]{3}$`)

func (req orderCreateRequest) validate() error {
	switch {
	case req.CustomerID == "" || len(req.CustomerID) > 200:
		return badRequest{`field "customer_id" is required (at most 200 characters)`}
	case len(req.AffiliateID) > 200:
		return badRequest{`field "affiliate_id" is at most 200 characters`}
	case req.AmountCents <= 0 || req.AmountCents > 1_000_000_000_00:
		return badRequest{`field "amount_cents" must be a positive integer (at most 100000000000)`}
	case !currencyRe.MatchString(req.Currency):
		return badRequest{fmt.Sprintf(`field "currency" must be an ISO 4217 code such as "BRL", got %q`, req.Currency)}
	}
	return nil
}

// orderResponse is the public shape of an order.
type orderResponse struct {
	ID          uuid.UUID  `json:"id"`
	CustomerID  string     `json:"customer_id"`
	AffiliateID *string    `json:"affiliate_id"`
	AmountCents int64      `json:"amount_cents"`
	Currency    string     `json:"currency"`
	Status      string     `json:"status"`
	CreatedAt   time.Time  `json:"created_at"`
	PaidAt      *time.Time `json:"paid_at"`
}

func newOrderResponse(o db.Order) orderResponse {
	resp := orderResponse{
		ID: o.ID, CustomerID: o.CustomerID, AmountCents: o.AmountCents, Currency: o.Currency,
		Status: o.Status, CreatedAt: o.CreatedAt, PaidAt: o.PaidAt,
	}
	if o.AffiliateID.Valid {
		resp.AffiliateID = &o.AffiliateID.String
	}
	return resp
}

func (s *server) handleOrderCreate(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, maxJSONBody)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var req orderCreateRequest
	if err := decodeStrict(body, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	if err := req.validate(); err != nil {
		s.problem(w, r, err)
		return
	}
	o, err := order.Create(r.Context(), s.q, order.NewOrder{
		CustomerID: req.CustomerID, AffiliateID: req.AffiliateID, AmountCents: req.AmountCents, Currency: req.Currency,
	})
	if err != nil {
		s.problem(w, r, err)
		return
	}
	w.Header().Set("Location", "/orders/"+o.ID.String())
	writeJSON(w, http.StatusCreated, newOrderResponse(o))
}

func (s *server) handleOrderGet(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	o, err := order.Get(r.Context(), s.q, id)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newOrderResponse(o))
}
