package app

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/ops/reconcile"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// errFindingsLeft is reconcile's answer while findings are left: exit 1.
var errFindingsLeft = errors.New("reconcile: findings left (see the report)")

// errWaiting is its answer while what it settled waits for the worker: exit
// 3, so that a cron job can tell it from done (0).
var errWaiting = errors.New("reconcile: not done, settlements wait for the worker (run again later)")

// reconcileUsage is the first lines of reconcile -h: its flags, then its
// exit statuses.
var reconcileUsage = fmt.Sprintf(`[--dry-run] [--json] [--window D] [--grace D]
exit status: %d done (nothing left, nothing waiting); %d a finding left for a person, or found by a dry run (or the run failed);
%d a mistake on the command line; %d settled, but the worker has not applied all of it yet: run again later`,
	reconcile.ExitDone, reconcile.ExitLeft, reconcile.ExitUsage, reconcile.ExitWaiting)

func runReconcile(e Env, lab Lab) error {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	dryRun := fs.Bool("dry-run", false, "report what disagrees, settle nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	window := fs.Duration("window", 0, "only orders created this long ago or later (0: every order)")
	grace := fs.Duration("grace", time.Minute, fmt.Sprintf("an order quiet for less than this is in flight, not missing: at least %s, "+
		"the api's charge lease (%s) and its gateway call's timeout (%s); shorter only in a dev run (%s=1)",
		reconcile.MinGrace, payment.DefaultLockTimeout, payment.GatewayTimeout, config.DevVariable))
	levers := pull(lab, fs, "reconcile", Parts{})
	if err := ParseFlags(fs, e, reconcileUsage); err != nil {
		return HelpOK(err)
	}
	if *window < 0 || *grace <= 0 {
		return UsageError{fmt.Errorf("reconcile: --window %s, --grace %s: want a window of 0 or more and a positive grace", *window, *grace)}
	}
	cfg, _, err := LoadConfig(e)
	if err != nil {
		return err
	}
	if *grace < reconcile.MinGrace && !cfg.Dev {
		return UsageError{fmt.Errorf("reconcile: --grace %s is shorter than an api request may still be working on an order's charge, "+
			"and reconcile would settle work in flight: want at least %s (the charge lease, %s, and the gateway call's timeout, %s)",
			*grace, reconcile.MinGrace, payment.DefaultLockTimeout, payment.GatewayTimeout)}
	}
	lv, err := levers(cfg.Dev)
	if err != nil {
		return err
	}
	defer lv.close()
	return WithPool(e, cfg, func(pool *pgxpool.Pool) error {
		if err := postgres.RequireSchema(e.Ctx, pool); err != nil {
			return err
		}
		r := reconcile.New(pool, reconcile.NewHTTPProviders(cfg.FakesURL, nil), lv.ingestor(webhook.NewIngestor(pool, nil)),
			reconcile.Config{Window: *window, Grace: *grace, DryRun: *dryRun})
		rep, err := r.Run(e.Ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			err = rep.WriteJSON(e.Stdout)
		} else {
			err = rep.WriteTable(e.Stdout)
		}
		if err != nil {
			return err
		}
		switch rep.ExitStatus() {
		case reconcile.ExitLeft:
			return errFindingsLeft
		case reconcile.ExitWaiting:
			return StatusError{reconcile.ExitWaiting, errWaiting}
		}
		return nil
	})
}
