package stock

import (
	"context"
	"fmt"

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
// and only for those rows does it add the units back, in SKU order (the
// order of OrderItems, which Reserve takes too).
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
	if err := giveBack(ctx, q, orderID, released); err != nil {
		return "", err
	}
	if err := q.StockMovementInsert(ctx, queries.StockMovementInsertParams{OrderID: orderID, Kind: "release", MessageID: messageID}); err != nil {
		return "", fmt.Errorf("record the release of order %s: %w", orderID, err)
	}
	return effect.Applied, nil
}

// giveBack adds the released units back to their SKUs, in SKU order. The
// order is the database's (OrderItems sorts by the column's collation, as
// Reserve and the batch locks do), not Go's byte order: under a locale such
// as en_US the two differ ("a" < "B" against "B" < "a"), and a release going
// one way would deadlock with a reservation going the other.
func giveBack(ctx context.Context, q *queries.Queries, orderID uuid.UUID, released []queries.StockReservationReleaseRow) error {
	items, err := q.OrderItems(ctx, orderID)
	if err != nil {
		return fmt.Errorf("read items of order %s: %w", orderID, err)
	}
	back := make(map[string]int32, len(released))
	for _, r := range released {
		back[r.Sku] = r.Quantity
	}
	for _, it := range items {
		n, ok := back[it.Sku]
		if !ok {
			continue
		}
		delete(back, it.Sku)
		if err := q.StockGiveBack(ctx, queries.StockGiveBackParams{Sku: it.Sku, Quantity: n}); err != nil {
			return fmt.Errorf("give %d of %s back for order %s: %w", n, it.Sku, orderID, err)
		}
	}
	if len(back) != 0 {
		return fmt.Errorf("release order %s: reservations %v are not items of the order", orderID, back)
	}
	return nil
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
