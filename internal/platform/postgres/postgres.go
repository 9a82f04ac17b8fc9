package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxConns is the pool size unless DATABASE_URL sets pool_max_conns.
// pgx's own default (4 on two cores) is too small here: every watermill-sql
// subscription (the relay and each consumer on BROKER=postgres) holds a
// connection in a transaction while its handler runs, and the handler needs
// connections of its own on top.
const DefaultMaxConns = 20

// Connect opens a pool on databaseURL and checks that the server answers, so a
// wrong DATABASE_URL fails at start-up with a message that says what to do.
// adjust, if any, changes the pool's configuration first (the lab's faults).
func Connect(ctx context.Context, databaseURL string, adjust ...func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.ConnConfig.Tracer = queryTracer{} // query spans, inside traces only (querytrace.go)
	for _, f := range adjust {
		if f != nil {
			f(cfg)
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		if ctx.Err() != nil { // stopped while connecting: nothing is wrong with PostgreSQL
			return nil, fmt.Errorf("connect to PostgreSQL: %w", ctx.Err())
		}
		return nil, fmt.Errorf("reach PostgreSQL at %s:%d (is it running, and is DATABASE_URL right?): %w",
			cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}
