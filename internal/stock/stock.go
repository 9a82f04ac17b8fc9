package stock

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// MaxAvailable bounds what Set accepts for one SKU.
const MaxAvailable = 1_000_000_000

// ErrNotFound means no SKU has the given name.
var ErrNotFound = errors.New("unknown SKU")

// skuRe is a SKU's spelling: 1 to 64 letters, digits, '_' or '-'.
var skuRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidSKU reports whether sku is spelt as a SKU may be.
func ValidSKU(sku string) bool { return skuRe.MatchString(sku) }

// Level is a SKU's stock: Available is left to sell, Reserved is held by the
// live reservations of paid orders.
type Level struct {
	SKU       string `json:"sku"`
	Available int64  `json:"available"`
	Reserved  int64  `json:"reserved"`
}

// Set sets sku's stock to available, creating the SKU if needed. It is a set,
// not an increment: the same call twice leaves the same value.
func Set(ctx context.Context, q *queries.Queries, sku string, available int64) (Level, error) {
	if !ValidSKU(sku) || available < 0 || available > MaxAvailable {
		return Level{}, fmt.Errorf("set stock of %q to %d: invalid SKU or amount", sku, available)
	}
	if _, err := q.StockSet(ctx, queries.StockSetParams{Sku: sku, Available: int32(available)}); err != nil {
		return Level{}, fmt.Errorf("set stock of %s: %w", sku, err)
	}
	return Get(ctx, q, sku)
}

// Get reads sku's stock; ErrNotFound for an unknown SKU.
func Get(ctx context.Context, q *queries.Queries, sku string) (Level, error) {
	row, err := q.StockGet(ctx, sku)
	if errors.Is(err, pgx.ErrNoRows) {
		return Level{}, ErrNotFound
	}
	if err != nil {
		return Level{}, fmt.Errorf("get stock of %s: %w", sku, err)
	}
	return Level{SKU: row.Sku, Available: int64(row.Available), Reserved: row.Reserved}, nil
}
