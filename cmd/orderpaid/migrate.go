package main

import (
	"flag"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

func runMigrate(e env) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if err := parseFlags(fs, e, ""); err != nil {
		return helpOK(err)
	}
	return onDatabase(e, func(pool *pgxpool.Pool) error {
		return postgres.Migrate(e.ctx, pool, e.stdout)
	})
}
