package app

import (
	"flag"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

func runMigrate(e Env) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if err := ParseFlags(fs, e, ""); err != nil {
		return HelpOK(err)
	}
	return OnDatabase(e, func(pool *pgxpool.Pool) error {
		return postgres.Migrate(e.Ctx, pool, e.Stdout)
	})
}
