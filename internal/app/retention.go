package app

import (
	"flag"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

func runRetention(e Env) error {
	fs := flag.NewFlagSet("retention", flag.ContinueOnError)
	once := fs.Bool("once", false, "clean once and exit (for a cron job) instead of every --interval")
	inboxWindow := fs.Duration("inbox-window", retention.DefaultInboxWindow,
		fmt.Sprintf("keep webhook and consumer inbox rows this long (at least %s, the longest provider retry horizon)", retention.MinInboxWindow))
	execWindow := fs.Duration("execution-window", retention.DefaultExecutionWindow, "keep the execution log this long")
	outboxWindow := fs.Duration("outbox-window", retention.DefaultOutboxWindow,
		"keep relayed outbox rows, and postgres-broker messages every consumer has read, this long (at least --inbox-window; what is not relayed or read yet is always kept)")
	interval := fs.Duration("interval", retention.DefaultInterval, "pause between two runs")
	batch := fs.Int("batch", retention.DefaultBatchSize, "rows per DELETE")
	if err := ParseFlags(fs, e, "[--once] [--inbox-window D] [--execution-window D] [--outbox-window D] [--interval D] [--batch N]"); err != nil {
		return HelpOK(err)
	}
	if *batch < 1 || *batch > 100_000 {
		return UsageError{fmt.Errorf("retention: --batch %d: want 1 to 100000", *batch)}
	}
	if err := checkWindows(*inboxWindow, *execWindow, *outboxWindow, *interval); err != nil {
		return UsageError{fmt.Errorf("retention: %w", err)}
	}
	cfg, logger, err := LoadConfig(e)
	if err != nil {
		return err
	}
	rcfg := retention.Config{InboxWindow: *inboxWindow, ExecutionWindow: *execWindow, OutboxWindow: *outboxWindow, Interval: *interval, BatchSize: *batch, Logger: logger,
		FromWAL: cfg.OutboxRelay == config.RelayLogical}
	if cfg.Broker == config.BrokerPostgres {
		for _, s := range consumer.Subscriptions() {
			rcfg.BrokerTopics = append(rcfg.BrokerTopics, cfg.BrokerPrefix+s.Topic)
		}
	}
	if _, err := retention.NewCleaner(nil, rcfg); err != nil {
		return UsageError{fmt.Errorf("retention: %w", err)}
	}
	return WithPool(e, cfg, func(pool *pgxpool.Pool) error {
		cleaner, err := retention.NewCleaner(pool, rcfg)
		if err != nil {
			return err
		}
		if !*once {
			fmt.Fprintf(e.Stdout, "retention running every %s (inbox window %s, execution window %s, outbox window %s)\n",
				*interval, *inboxWindow, *execWindow, *outboxWindow)
			return cleaner.Run(e.Ctx)
		}
		start := time.Now()
		r, err := cleaner.RunOnce(e.Ctx)
		fmt.Fprintf(e.Stdout, "retention: removed %d webhook inbox, %d consumer inbox, %d execution log, %d relayed outbox and %d consumed broker rows in %s\n",
			r.WebhookInbox, r.ConsumerInbox, r.Executions, r.Outbox, r.BrokerMessages, time.Since(start).Round(time.Millisecond))
		return err
	})
}

// checkWindows refuses a duration flag that retention.Config would not take
// as given: it reads a zero as "the default", so --interval 0 would run
// hourly and --execution-window 0 keep 30 days, without a word. Each error
// names the flag and the values it accepts.
func checkWindows(inbox, execution, outbox, interval time.Duration) error {
	if inbox < retention.MinInboxWindow {
		return fmt.Errorf("--inbox-window %s: want at least %s, the time a provider may still redeliver a webhook (default %s)",
			inbox, retention.MinInboxWindow, retention.DefaultInboxWindow)
	}
	if outbox < inbox {
		return fmt.Errorf("--outbox-window %s: want at least --inbox-window (%s): the consumer inbox clean-up reads the outbox rows inside the inbox window (default %s)",
			outbox, inbox, retention.DefaultOutboxWindow)
	}
	if execution <= 0 {
		return fmt.Errorf("--execution-window %s: want a positive duration, such as %s (the default)", execution, retention.DefaultExecutionWindow)
	}
	if interval <= 0 {
		return fmt.Errorf("--interval %s: want a positive duration, such as %s (the default)", interval, retention.DefaultInterval)
	}
	return nil
}
