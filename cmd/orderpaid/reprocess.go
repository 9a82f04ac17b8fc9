package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/postgres"
	"github.com/orderpaid/orderpaid/internal/reprocess"
)

func runReprocess(e env) error {
	fs := flag.NewFlagSet("reprocess", flag.ContinueOnError)
	orderFlag := fs.String("order", "", "replay order_paid for this paid order id")
	messageFlag := fs.String("message", "", "replay this message id, as found in the outbox")
	poisonFlag := fs.Bool("poison", false, "replay every pending message of the poison queue")
	dryRun := fs.Bool("dry-run", false, "show what would be replayed, write nothing")
	if err := parseFlags(fs, e, "(--order ID | --message ID | --poison) [--dry-run]"); err != nil {
		return helpOK(err)
	}
	chosen := 0
	for _, set := range []bool{*orderFlag != "", *messageFlag != "", *poisonFlag} {
		if set {
			chosen++
		}
	}
	if chosen != 1 {
		fs.Usage()
		return usageError{errors.New("reprocess: give exactly one of --order, --message, --poison")}
	}
	var orderID uuid.UUID
	if *orderFlag != "" {
		var err error
		if orderID, err = uuid.Parse(*orderFlag); err != nil {
			return usageError{fmt.Errorf("reprocess: --order %q is not a UUID", *orderFlag)}
		}
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
	switch {
	case *orderFlag != "":
		return reprocess.Order(e.ctx, pool, orderID, *dryRun, e.stdout)
	case *messageFlag != "":
		return reprocess.Message(e.ctx, pool, *messageFlag, *dryRun, e.stdout)
	default:
		n, err := reprocess.Poison(e.ctx, pool, *dryRun, e.stdout)
		fmt.Fprintf(e.stdout, "replayed %d message(s)\n", n)
		return err
	}
}
