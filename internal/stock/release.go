package stock

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Release gives an order's reserved items back to stock, once, in the
// caller's transaction: what a refund of the order does to its reservation.
//
// Effect protected: the increment of each SKU's counter, the mirror of
// Reserve's decrement, with the same danger (an increment that runs once per
// delivery gives back units that were never taken). The guard is a
// conditional UPDATE of the reservation rows, WHERE released_at IS NULL
// RETURNING them: of any number of concurrent or repeated releases exactly
// one gets the rows back (READ COMMITTED re-checks the WHERE after waiting),
// and only for those rows does it add the units back, in SKU order.
//
// Outcomes: Applied (given back now), AlreadyApplied (released before),
// NotApplicable (the order reserved nothing: no items, or refunded before its
// reservation).
func Release(ctx context.Context, tx pgx.Tx, orderID uuid.UUID, messageID string) (effect.Outcome, error) {
	q := queries.New(tx)
	released, err := q.StockReservationRelease(ctx, orderID)
	if err != nil {
		return "", fmt.Errorf("release the reservation of order %s: %w", orderID, err)
	}
	if len(released) == 0 {
		reserved, err := q.StockReservedEver(ctx, orderID)
		if err != nil {
			return "", fmt.Errorf("read the reservation of order %s: %w", orderID, err)
		}
		if reserved {
			return effect.AlreadyApplied, nil
		}
		return effect.NotApplicable, nil
	}
	slices.SortFunc(released, func(a, b queries.StockReservationReleaseRow) int { return cmp.Compare(a.Sku, b.Sku) })
	for _, r := range released {
		if err := q.StockGiveBack(ctx, queries.StockGiveBackParams{Sku: r.Sku, Quantity: r.Quantity}); err != nil {
			return "", fmt.Errorf("give %d of %s back for order %s: %w", r.Quantity, r.Sku, orderID, err)
		}
	}
	if err := q.StockMovementInsert(ctx, queries.StockMovementInsertParams{OrderID: orderID, Kind: "release", MessageID: messageID}); err != nil {
		return "", fmt.Errorf("record the release of order %s: %w", orderID, err)
	}
	return effect.Applied, nil
}

// ReleaseUnguarded is the mistake Release prevents, kept for the scenarios
// "--without stock-reservation": the naive counter, an increment of each of
// the order's items per delivery, with no reservation row to consult. Every
// redelivered refund gives the items back again, units that were never
// taken: stock appears that does not exist, and is sold.
func ReleaseUnguarded(ctx context.Context, tx pgx.Tx, orderID uuid.UUID, messageID string) (effect.Outcome, error) {
	q := queries.New(tx)
	items, err := q.OrderItems(ctx, orderID)
	if err != nil {
		return "", fmt.Errorf("read items of order %s: %w", orderID, err)
	}
	if len(items) == 0 {
		return effect.NotApplicable, nil
	}
	for _, it := range items {
		if err := q.StockGiveBack(ctx, queries.StockGiveBackParams{Sku: it.Sku, Quantity: it.Quantity}); err != nil {
			return "", fmt.Errorf("give %d of %s back for order %s: %w", it.Quantity, it.Sku, orderID, err)
		}
	}
	if err := q.StockMovementInsert(ctx, queries.StockMovementInsertParams{OrderID: orderID, Kind: "release", MessageID: messageID}); err != nil {
		return "", fmt.Errorf("record the release of order %s: %w", orderID, err)
	}
	return effect.Applied, nil
}
