package app

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/ops/backfill"
)

func runBackfill(e Env) error {
	fs := flag.NewFlagSet("backfill", flag.ContinueOnError)
	from := fs.String("from", "", "start of the paid_at range, RFC 3339 (inclusive), e.g. 2026-11-01T00:00:00Z")
	to := fs.String("to", "", "end of the paid_at range, RFC 3339 (exclusive); default now")
	batch := fs.Int("batch", 500, "orders per transaction")
	dryRun := fs.Bool("dry-run", false, "count and report, write nothing")
	if err := ParseFlags(fs, e, "--from T [--to T] [--batch N] [--dry-run]"); err != nil {
		return HelpOK(err)
	}
	if *from == "" {
		fs.Usage()
		return UsageError{errors.New("backfill: --from is required")}
	}
	start, err := time.Parse(time.RFC3339, *from)
	if err != nil {
		return UsageError{fmt.Errorf("backfill: --from %q is not an RFC 3339 time such as 2026-11-01T00:00:00Z", *from)}
	}
	end := time.Now()
	if *to != "" {
		if end, err = time.Parse(time.RFC3339, *to); err != nil {
			return UsageError{fmt.Errorf("backfill: --to %q is not an RFC 3339 time such as 2026-11-30T00:00:00Z", *to)}
		}
	}
	if !end.After(start) {
		return UsageError{fmt.Errorf("backfill: --to (%s) must be after --from (%s)", end.Format(time.RFC3339), start.Format(time.RFC3339))}
	}
	if *batch < 1 || *batch > 10_000 {
		return UsageError{fmt.Errorf("backfill: --batch %d: want 1 to 10000", *batch)}
	}
	return OnDatabase(e, func(pool *pgxpool.Pool) error {
		_, err := backfill.Run(e.Ctx, pool, backfill.Config{From: start, To: end, BatchSize: *batch, DryRun: *dryRun, Progress: e.Stdout})
		return err
	})
}
