package order

import (
	"context"
	"errors"
	"fmt"

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
}

// Create stores a new pending order.
func Create(ctx context.Context, q *queries.Queries, in NewOrder) (queries.Order, error) {
	o, err := q.OrderCreate(ctx, queries.OrderCreateParams{
		ID:          uuid.New(),
		CustomerID:  in.CustomerID,
		AffiliateID: pgtype.Text{String: in.AffiliateID, Valid: in.AffiliateID != ""},
		AmountCents: in.AmountCents,
		Currency:    in.Currency,
	})
	if err != nil {
		return queries.Order{}, fmt.Errorf("create order: %w", err)
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
