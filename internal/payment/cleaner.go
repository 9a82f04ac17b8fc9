package payment

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Cleaner deletes completed keys older than Config.Retention.
//
// A key is a promise about retries: for Retention after the first request, a
// retry gets the stored response. After that the key is forgotten and the
// same key would be a new request; clients retry within minutes, not days.
// Keys without a stored response (locked, or released after a gateway
// failure) are never deleted: their row is what lets a retry recover the key
// and repeat the derived gateway key, so that a charge the gateway may have
// made is found rather than made again.
//
// The cutoff is the one time this package takes from the api's clock
// (Config.Clock), not a lease: a clock that is off moves it by as much. A
// key deleted early only makes a late retry a new request, which the
// order's charge claim still answers with the order's one charge
// (key_expired_test.go).
//
// Deleting is idempotent, so running the Cleaner twice, or in several
// processes at once, is safe: a row deleted by one is skipped by the other.
type Cleaner struct {
	pool   *pgxpool.Pool
	cfg    Config
	logger *slog.Logger
}

// NewCleaner returns a Cleaner using cfg.Retention and cfg.CleanInterval.
// A nil logger discards the log.
func NewCleaner(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) *Cleaner {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Cleaner{pool: pool, cfg: cfg.withDefaults(), logger: logger}
}

// Run cleans once at start and then every CleanInterval until ctx is done;
// it then returns nil. A failed round is logged and the next one tried: a
// missed clean-up only keeps rows a little longer.
func (c *Cleaner) Run(ctx context.Context) error {
	ticker := time.NewTicker(c.cfg.CleanInterval)
	defer ticker.Stop()
	for {
		n, err := c.RunOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			c.logger.WarnContext(ctx, "idempotency key clean-up failed", "err", err)
		case n > 0:
			c.logger.InfoContext(ctx, "deleted expired idempotency keys", "count", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// RunOnce deletes the completed keys created more than Retention ago and
// returns how many it deleted.
func (c *Cleaner) RunOnce(ctx context.Context) (int64, error) {
	cutoff := c.cfg.Clock().Add(-c.cfg.Retention)
	n, err := queries.New(c.pool).IdempotencyKeyDeleteOlderThan(ctx, cutoff)
	if err != nil {
		return 0, fmt.Errorf("delete completed idempotency keys created before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	return n, nil
}
