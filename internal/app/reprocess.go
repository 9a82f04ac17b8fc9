package app

import (
	"errors"
	"flag"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/ops/reprocess"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
)

func runReprocess(e Env) error {
	fs := flag.NewFlagSet("reprocess", flag.ContinueOnError)
	orderFlag := fs.String("order", "", "replay order_paid for this paid order id")
	messageFlag := fs.String("message", "", "replay this message id, as found in the outbox")
	poisonFlag := fs.Bool("poison", false, "replay every pending message of the poison queue")
	dryRun := fs.Bool("dry-run", false, "show what would be replayed (topic, message, order, age, action) and write nothing")
	window := fs.Duration("window", retention.DefaultInboxWindow, "the inbox retention window (as given to orderpaid retention)")
	force := fs.Bool("force", false, "replay an order_confirmed older than --window anyway (its e-mail may go out twice: check the provider first)")
	if err := ParseFlags(fs, e, "(--order ID | --message ID | --poison) [--dry-run] [--window D] [--force]"); err != nil {
		return HelpOK(err)
	}
	chosen := 0
	for _, set := range []bool{*orderFlag != "", *messageFlag != "", *poisonFlag} {
		if set {
			chosen++
		}
	}
	if chosen != 1 {
		fs.Usage()
		return UsageError{errors.New("reprocess: give exactly one of --order, --message, --poison")}
	}
	if *window <= 0 {
		return UsageError{fmt.Errorf("reprocess: --window %s: want a positive duration such as 168h", *window)}
	}
	var orderID uuid.UUID
	if *orderFlag != "" {
		var err error
		if orderID, err = uuid.Parse(*orderFlag); err != nil {
			return UsageError{fmt.Errorf("reprocess: --order %q is not a UUID", *orderFlag)}
		}
	}
	opts := reprocess.Options{DryRun: *dryRun, Window: *window, Force: *force, Out: e.Stdout}
	return OnDatabase(e, func(pool *pgxpool.Pool) error {
		switch {
		case *orderFlag != "":
			return reprocess.Order(e.Ctx, pool, orderID, opts)
		case *messageFlag != "":
			return reprocess.Message(e.Ctx, pool, *messageFlag, opts)
		default:
			_, err := reprocess.Poison(e.Ctx, pool, opts)
			return err
		}
	})
}
