package main

import (
	"flag"

	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

func runMigrate(e env) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if err := parseFlags(fs, e, ""); err != nil {
		return helpOK(err)
	}
	cfg, _, err := loadConfig(e)
	if err != nil {
		return err
	}
	pool, err := postgres.Connect(e.ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	return postgres.Migrate(e.ctx, pool, e.stdout)
}
