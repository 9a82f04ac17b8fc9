package app

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// onDatabase reads the configuration and runs fn with a pool on its
// DATABASE_URL: how the commands that work on the database alone (migrate,
// backfill, reprocess) begin once their flags are checked.
func OnDatabase(e Env, fn func(pool *pgxpool.Pool) error) error {
	cfg, _, err := LoadConfig(e)
	if err != nil {
		return err
	}
	return WithPool(e, cfg, fn)
}

// withPool opens a pool on cfg's DATABASE_URL, runs fn with it and closes
// it. retention calls it after checking what depends on the configuration.
func WithPool(e Env, cfg config.Config, fn func(pool *pgxpool.Pool) error) error {
	pool, err := postgres.Connect(e.Ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(pool)
}
