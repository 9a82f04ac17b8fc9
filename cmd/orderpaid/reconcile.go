package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/ops/reconcile"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// errFindingsLeft is reconcile's answer while findings are left: exit 1.
var errFindingsLeft = errors.New("reconcile: findings left (see the report)")

func runReconcile(e env) error {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	dryRun := fs.Bool("dry-run", false, "report what disagrees, settle nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	window := fs.Duration("window", 0, "only orders created this long ago or later (0: every order)")
	grace := fs.Duration("grace", time.Minute, "an order quiet for less than this is in flight, not missing")
	without := fs.String("without", "", "lab: switch guards off in what reconcile settles through (dev runs only, ORDERPAID_DEV=1)")
	if err := parseFlags(fs, e, "[--dry-run] [--json] [--window D] [--grace D] [--without GUARDS]"); err != nil {
		return helpOK(err)
	}
	if *window < 0 || *grace <= 0 {
		return usageError{fmt.Errorf("reconcile: --window %s, --grace %s: want a window of 0 or more and a positive grace", *window, *grace)}
	}
	cfg, _, err := loadConfig(e)
	if err != nil {
		return err
	}
	lv, err := labLevers("reconcile", cfg.Dev, *without, "", false)
	if err != nil {
		return err
	}
	return withPool(e, cfg, func(pool *pgxpool.Pool) error {
		if err := postgres.RequireSchema(e.ctx, pool); err != nil {
			return err
		}
		r := reconcile.New(pool, reconcile.NewHTTPProviders(cfg.FakesURL, nil), switches.Ingestor(webhook.NewIngestor(pool, nil), lv.guards),
			reconcile.Config{Window: *window, Grace: *grace, DryRun: *dryRun})
		rep, err := r.Run(e.ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			err = rep.WriteJSON(e.stdout)
		} else {
			err = rep.WriteTable(e.stdout)
		}
		if err != nil {
			return err
		}
		if rep.Left() > 0 {
			return errFindingsLeft
		}
		return nil
	})
}
