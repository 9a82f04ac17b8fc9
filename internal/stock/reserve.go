package stock

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// ErrOutOfStock means a SKU of the order has fewer units left than the order
// asks for: nothing of the order was reserved.
var ErrOutOfStock = errors.New("out of stock")

// Reserve takes the order's items out of stock, once, in the caller's
// transaction.
//
// Effect protected: each SKU's counter's decrement. For each item, in SKU
// order (so two orders cannot deadlock), it inserts the reservation row,
// (order, SKU), ON CONFLICT DO NOTHING, and only for a row it inserted takes
// the quantity, UPDATE ... WHERE available >= quantity; in a savepoint, whole
// or not at all.
//
// Outcomes: Applied, AlreadyApplied (an earlier delivery reserved it),
// NotApplicable (no items). A SKU short of units is ErrOutOfStock, nothing
// reserved: the order_paid consumer fails for good, to the poison queue, and
// a replay after a refill runs it again.
func Reserve(ctx context.Context, tx pgx.Tx, orderID uuid.UUID, messageID string) (effect.Outcome, error) {
	items, err := queries.New(tx).OrderItems(ctx, orderID)
	if err != nil {
		return "", fmt.Errorf("read items of order %s: %w", orderID, err)
	}
	if len(items) == 0 {
		return effect.NotApplicable, nil
	}
	sp, err := tx.Begin(ctx) // a savepoint: all items or none
	if err != nil {
		return "", fmt.Errorf("reserve order %s: %w", orderID, err)
	}
	defer sp.Rollback(ctx) // a no-op once released
	q := queries.New(sp)
	for i, it := range items {
		n, err := q.StockReservationInsert(ctx, queries.StockReservationInsertParams{OrderID: orderID, Sku: it.Sku, Quantity: it.Quantity})
		if err != nil {
			return "", fmt.Errorf("reserve %s for order %s: %w", it.Sku, orderID, err)
		}
		if n == 0 {
			if i > 0 {
				// Reservations are written whole in one savepoint, so the rows
				// of an order exist all or none.
				return "", fmt.Errorf("reserve order %s: %s is reserved but %s was not", orderID, it.Sku, items[0].Sku)
			}
			return effect.AlreadyApplied, nil
		}
		taken, err := q.StockTake(ctx, queries.StockTakeParams{Sku: it.Sku, Quantity: it.Quantity})
		if err != nil {
			return "", fmt.Errorf("take %d of %s for order %s: %w", it.Quantity, it.Sku, orderID, err)
		}
		if taken == 0 {
			return "", fmt.Errorf("%w: %s has fewer than %d left for order %s", ErrOutOfStock, it.Sku, it.Quantity, orderID)
		}
	}
	if err := q.StockMovementInsert(ctx, queries.StockMovementInsertParams{OrderID: orderID, Kind: "reserve", MessageID: messageID}); err != nil {
		return "", fmt.Errorf("record the reservation of order %s: %w", orderID, err)
	}
	if err := sp.Commit(ctx); err != nil {
		return "", fmt.Errorf("reserve order %s: %w", orderID, err)
	}
	return effect.Applied, nil
}

// ReserveUnguarded is the mistake Reserve prevents, kept for the scenario
// "--without stock-reservation": the naive counter, a decrement per delivery
// with no reservation row to meet. Every redelivery takes the items again.
func ReserveUnguarded(ctx context.Context, tx pgx.Tx, orderID uuid.UUID, messageID string) (effect.Outcome, error) {
	q := queries.New(tx)
	items, err := q.OrderItems(ctx, orderID)
	if err != nil {
		return "", fmt.Errorf("read items of order %s: %w", orderID, err)
	}
	if len(items) == 0 {
		return effect.NotApplicable, nil
	}
	for _, it := range items {
		if _, err := q.StockTakeUnguarded(ctx, queries.StockTakeUnguardedParams{Sku: it.Sku, Quantity: it.Quantity}); err != nil {
			return "", fmt.Errorf("take %d of %s for order %s: %w", it.Quantity, it.Sku, orderID, err)
		}
	}
	if err := q.StockMovementInsert(ctx, queries.StockMovementInsertParams{OrderID: orderID, Kind: "reserve", MessageID: messageID}); err != nil {
		return "", fmt.Errorf("record the reservation of order %s: %w", orderID, err)
	}
	return effect.Applied, nil
}
