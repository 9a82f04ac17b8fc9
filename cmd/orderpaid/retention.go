package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/orderpaid/orderpaid/internal/postgres"
	"github.com/orderpaid/orderpaid/internal/retention"
)

func runRetention(e env) error {
	fs := flag.NewFlagSet("retention", flag.ContinueOnError)
	once := fs.Bool("once", false, "clean once and exit (for a cron job) instead of every --interval")
	inboxWindow := fs.Duration("inbox-window", retention.DefaultInboxWindow,
		fmt.Sprintf("keep webhook and consumer inbox rows this long (at least %s, the longest provider retry horizon)", retention.MinInboxWindow))
	execWindow := fs.Duration("execution-window", retention.DefaultExecutionWindow, "keep the execution log this long")
	outboxWindow := fs.Duration("outbox-window", retention.DefaultOutboxWindow, "keep relayed outbox rows this long (at least --inbox-window; rows not relayed yet are always kept)")
	interval := fs.Duration("interval", retention.DefaultInterval, "pause between two runs")
	batch := fs.Int("batch", retention.DefaultBatchSize, "rows per DELETE")
	if err := parseFlags(fs, e, "[--once] [--inbox-window D] [--execution-window D] [--outbox-window D] [--interval D] [--batch N]"); err != nil {
		return helpOK(err)
	}
	if *batch < 1 || *batch > 100_000 {
		return usageError{fmt.Errorf("retention: --batch %d: want 1 to 100000", *batch)}
	}
	cfg, logger, err := loadConfig(e)
	if err != nil {
		return err
	}
	rcfg := retention.Config{InboxWindow: *inboxWindow, ExecutionWindow: *execWindow, OutboxWindow: *outboxWindow, Interval: *interval, BatchSize: *batch, Logger: logger}
	if _, err := retention.NewCleaner(nil, rcfg); err != nil {
		return usageError{fmt.Errorf("retention: %w", err)}
	}
	pool, err := postgres.Connect(e.ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	cleaner, err := retention.NewCleaner(pool, rcfg)
	if err != nil {
		return err
	}
	if !*once {
		fmt.Fprintf(e.stdout, "retention running every %s (inbox window %s, execution window %s, outbox window %s)\n",
			*interval, *inboxWindow, *execWindow, *outboxWindow)
		return cleaner.Run(e.ctx)
	}
	start := time.Now()
	r, err := cleaner.RunOnce(e.ctx)
	fmt.Fprintf(e.stdout, "retention: removed %d webhook inbox, %d consumer inbox, %d execution log and %d relayed outbox rows in %s\n",
		r.WebhookInbox, r.ConsumerInbox, r.Executions, r.Outbox, time.Since(start).Round(time.Millisecond))
	return err
}
