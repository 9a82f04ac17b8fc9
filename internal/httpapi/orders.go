package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bojanz/currency"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/stock"
)

type orderCreateRequest struct {
	CustomerID  string       `json:"customer_id"`
	AffiliateID string       `json:"affiliate_id"`
	AmountCents int64        `json:"amount_cents"`
	Currency    string       `json:"currency"`
	Items       []order.Item `json:"items"`
}

// Bounds of an order's items (shared/CONTRACT.md), and of its ids in characters.
const (
	maxItems    = 50
	maxQuantity = 1000
	maxIDLength = 200
)

func (req orderCreateRequest) validate() error {
	if err := checkID("customer_id", req.CustomerID); err != nil {
		return err
	}
	if req.AffiliateID != "" { // optional: no affiliate, no commission
		if err := checkID("affiliate_id", req.AffiliateID); err != nil {
			return err
		}
	}
	switch {
	case req.AmountCents <= 0 || req.AmountCents > 1_000_000_000_00:
		return badRequest{`field "amount_cents" must be a positive integer (at most 100000000000)`}
	case !validCurrency(req.Currency):
		return badRequest{`field "currency" must be an ISO 4217 currency code in capitals, such as "BRL", "USD" or "EUR"`}
	}
	return validateItems(req.Items)
}

// errBadItems (422): the items are well-formed JSON but not an order one can
// fill: too many, a quantity out of range, a SKU twice or misspelt.
var errBadItems = errors.New("invalid items")

func validateItems(items []order.Item) error {
	if items == nil {
		return nil
	}
	if len(items) == 0 || len(items) > maxItems {
		return fmt.Errorf(`%w: field "items" holds 1 to %d items when present, got %d`, errBadItems, maxItems, len(items))
	}
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		switch {
		case !stock.ValidSKU(it.SKU):
			return fmt.Errorf(`%w: "items[%d].sku" must be 1 to 64 letters, digits, "_" or "-"`, errBadItems, i)
		case it.Quantity < 1 || it.Quantity > maxQuantity:
			return fmt.Errorf(`%w: "items[%d].quantity" must be 1 to %d`, errBadItems, i, maxQuantity)
		case seen[it.SKU]:
			return fmt.Errorf(`%w: SKU %q appears twice: give each SKU once, with its total quantity`, errBadItems, it.SKU)
		}
		seen[it.SKU] = true
	}
	return nil
}

// checkID refuses an id missing, too long, blank, or with control or format
// (Unicode Cf, invisible) characters: "c1\n" or "c1" with a zero-width space
// is a customer nobody can name, and U+202E prints an id reversed.
func checkID(field, id string) error {
	switch {
	case id == "" || utf8.RuneCountInString(id) > maxIDLength:
		return badRequest{fmt.Sprintf("field %q is required (1 to %d characters)", field, maxIDLength)}
	case strings.TrimSpace(id) == "":
		return badRequest{fmt.Sprintf("field %q must not be blank", field)}
	case strings.ContainsFunc(id, unicode.IsControl):
		return badRequest{fmt.Sprintf("field %q must not contain control characters", field)}
	case strings.ContainsFunc(id, func(r rune) bool { return unicode.Is(unicode.Cf, r) }):
		return badRequest{fmt.Sprintf("field %q must not contain invisible format characters (such as U+200B or U+202E)", field)}
	}
	return nil
}

// validCurrency reports whether code is a current ISO 4217 code as spelt
// there (the currency package's list): not withdrawn (HRK), not XXX or XTS,
// which name no money. A regexp cannot tell BRL from ZZZ.
func validCurrency(code string) bool {
	return code != "" && currency.IsValid(code) // IsValid takes "" as valid
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

func newOrderResponse(o queries.Order) orderResponse {
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
	var req orderCreateRequest
	if err := readJSON(w, r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	if err := req.validate(); err != nil {
		s.problem(w, r, err)
		return
	}
	var o queries.Order
	err := postgres.InTx(r.Context(), s.Pool, func(tx pgx.Tx) error {
		var err error
		o, err = order.Create(r.Context(), queries.New(tx), order.NewOrder{
			CustomerID: req.CustomerID, AffiliateID: req.AffiliateID, AmountCents: req.AmountCents, Currency: req.Currency, Items: req.Items,
		})
		return err
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
