package order

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Statuses an order can be in.
const (
	StatusPending = "pending"
	StatusPaid    = "paid"
)

// ErrNotFound means no order has the given id.
var ErrNotFound = errors.New("order not found")

// NewOrder is what a client sends to create an order.
type NewOrder struct {
	CustomerID  string
	AffiliateID string // empty: no affiliate, no commission
	AmountCents int64
	Currency    string
	Items       []Item // optional: what the order takes out of stock once paid (internal/stock)
}

// Item is a quantity of one SKU.
type Item struct {
	SKU      string `json:"sku"`
	Quantity int32  `json:"quantity"`
}

// ErrUnknownSKU means an item names a SKU that has no stock.
var ErrUnknownSKU = errors.New("unknown SKU")

// Create stores a new pending order with its items. With items, q must be
// bound to a transaction: the order and its items are written together, or
// neither (an unknown SKU is ErrUnknownSKU).
func Create(ctx context.Context, q *queries.Queries, in NewOrder) (queries.Order, error) {
	o, err := q.OrderCreate(ctx, queries.OrderCreateParams{
		ID: uuid.New(), CustomerID: in.CustomerID, AffiliateID: pgtype.Text{String: in.AffiliateID, Valid: in.AffiliateID != ""},
		AmountCents: in.AmountCents, Currency: in.Currency,
	})
	if err != nil {
		return queries.Order{}, fmt.Errorf("create order: %w", err)
	}
	if len(in.Items) == 0 {
		return o, nil
	}
	skus := make([]string, len(in.Items))
	for i, it := range in.Items {
		skus[i] = it.SKU
	}
	known, err := q.StockKnownSKUs(ctx, skus)
	if err != nil {
		return queries.Order{}, fmt.Errorf("check the SKUs of order %s: %w", o.ID, err)
	}
	for _, sku := range skus {
		if !slices.Contains(known, sku) {
			return queries.Order{}, fmt.Errorf("%w: %q has no stock (set it with PUT /stock/{sku})", ErrUnknownSKU, sku)
		}
	}
	for _, it := range in.Items {
		if err := q.OrderItemInsert(ctx, queries.OrderItemInsertParams{OrderID: o.ID, Sku: it.SKU, Quantity: it.Quantity}); err != nil {
			return queries.Order{}, fmt.Errorf("add %s to order %s: %w", it.SKU, o.ID, err)
		}
	}
	return o, nil
}

// Get reads one order; ErrNotFound when there is none.
func Get(ctx context.Context, q *queries.Queries, id uuid.UUID) (queries.Order, error) {
	o, err := q.OrderGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return queries.Order{}, ErrNotFound
	}
	if err != nil {
		return queries.Order{}, fmt.Errorf("get order %s: %w", id, err)
	}
	return o, nil
}
