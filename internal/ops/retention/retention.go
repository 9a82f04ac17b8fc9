package retention

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Defaults and limits of Config.
const (
	// DefaultInboxWindow is how long inbox rows are kept by default.
	DefaultInboxWindow = 7 * 24 * time.Hour
	// MinInboxWindow is the shortest window accepted: the longest time a
	// payment provider keeps retrying one webhook (Stripe: 3 days).
	MinInboxWindow = 72 * time.Hour
	// DefaultExecutionWindow is how long the execution log is kept.
	DefaultExecutionWindow = 30 * 24 * time.Hour
	// DefaultOutboxWindow is how long relayed outbox rows are kept.
	DefaultOutboxWindow = 30 * 24 * time.Hour
	// DefaultBatchSize is how many rows one DELETE takes.
	DefaultBatchSize = 1000
	// DefaultInterval is the pause between two runs of Run.
	DefaultInterval = time.Hour
)

// Config tunes the Cleaner. Zero values take the defaults above.
type Config struct {
	// InboxWindow: webhook and consumer inbox rows older than this are
	// removed (default 7 days, at least MinInboxWindow).
	InboxWindow time.Duration
	// ExecutionWindow: execution log rows older than this are removed
	// (default 30 days).
	ExecutionWindow time.Duration
	// OutboxWindow: outbox rows older than this are removed once relayed
	// (default 30 days, at least InboxWindow: the consumer inbox clean-up
	// and the reprocess tool read the outbox rows inside the inbox window).
	// Messages of BrokerTopics older than this are removed once every
	// consumer group has read them.
	OutboxWindow time.Duration
	// BrokerTopics are the postgres broker's topics, as the broker names
	// them (with BROKER_PREFIX); empty on another broker.
	BrokerTopics []string
	// FromWAL: the outbox is relayed from a logical replication slot
	// (OUTBOX_RELAY=logical), so an old row is removed whatever the polling
	// relay's positions say.
	FromWAL bool
	// BatchSize bounds each DELETE, so no run holds many locks for long.
	BatchSize int
	// Interval is the pause between runs of Run (default 1h).
	Interval time.Duration
	// Logger gets one line per run that removed something; nil discards.
	Logger *slog.Logger
}

// withDefaults fills the zero values and refuses a window that could remove
// rows a redelivery still needs.
func (c Config) withDefaults() (Config, error) {
	c.InboxWindow = cmp.Or(c.InboxWindow, DefaultInboxWindow)
	c.ExecutionWindow = cmp.Or(c.ExecutionWindow, DefaultExecutionWindow)
	c.OutboxWindow = cmp.Or(c.OutboxWindow, DefaultOutboxWindow)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.InboxWindow < MinInboxWindow {
		return c, fmt.Errorf("inbox window %s is shorter than %s, the time a provider may still redeliver a webhook: use %s or more",
			c.InboxWindow, MinInboxWindow, MinInboxWindow)
	}
	if c.OutboxWindow < c.InboxWindow {
		return c, fmt.Errorf("outbox window %s is shorter than the inbox window %s: the consumer inbox clean-up reads the outbox rows inside the inbox window; use %s or more",
			c.OutboxWindow, c.InboxWindow, c.InboxWindow)
	}
	if c.ExecutionWindow <= 0 || c.BatchSize < 1 || c.Interval <= 0 {
		return c, fmt.Errorf("execution window, batch size and interval must be positive")
	}
	return c, nil
}

// Result counts the rows one run removed.
type Result struct {
	WebhookInbox  int64
	ConsumerInbox int64
	Executions    int64
	Outbox        int64
	// BrokerMessages counts the postgres broker's messages removed, all
	// topics together.
	BrokerMessages int64
}

// Cleaner removes expired inbox and execution log rows.
type Cleaner struct {
	pool *pgxpool.Pool
	q    *queries.Queries
	cfg  Config
}

// NewCleaner returns a Cleaner working through pool. It fails for a Config
// that could remove what a redelivery still needs.
func NewCleaner(pool *pgxpool.Pool, cfg Config) (*Cleaner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Cleaner{pool: pool, q: queries.New(pool), cfg: cfg}, nil
}

// Run cleans every Interval until ctx is done, then returns nil. A failed
// run is logged and retried at the next interval.
func (c *Cleaner) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := c.RunOnce(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Error("retention run failed; retrying at the next interval", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce removes, batch by batch, every row past its window, and returns how
// many rows of each kind it removed. The cutoffs are the database's now()
// minus each window (RetentionCutoffs), never this process's clock: the
// rows were stamped by the database, and a host whose clock is days ahead
// would otherwise remove rows written minutes ago.
func (c *Cleaner) RunOnce(ctx context.Context) (Result, error) {
	var r Result
	cutoffs, err := c.q.RetentionCutoffs(ctx, queries.RetentionCutoffsParams{InboxWindowMs: c.cfg.InboxWindow.Milliseconds(),
		ExecutionWindowMs: c.cfg.ExecutionWindow.Milliseconds(), OutboxWindowMs: c.cfg.OutboxWindow.Milliseconds()})
	if err != nil {
		return r, fmt.Errorf("read the cutoffs on the database's clock: %w", err)
	}
	inboxCutoff, execCutoff, outboxCutoff := cutoffs.InboxCutoff, cutoffs.ExecutionCutoff, cutoffs.OutboxCutoff
	if r.WebhookInbox, err = drain(ctx, func() (int64, error) {
		return c.q.RetentionDeleteWebhookInbox(ctx, queries.RetentionDeleteWebhookInboxParams{Cutoff: inboxCutoff, BatchSize: int32(c.cfg.BatchSize)})
	}); err != nil {
		return r, fmt.Errorf("clean webhook inbox: %w", err)
	}
	if r.ConsumerInbox, err = drain(ctx, func() (int64, error) {
		return c.q.RetentionDeleteConsumerInbox(ctx, queries.RetentionDeleteConsumerInboxParams{Cutoff: inboxCutoff, BatchSize: int32(c.cfg.BatchSize)})
	}); err != nil {
		return r, fmt.Errorf("clean consumer inbox: %w", err)
	}
	if r.Executions, err = drain(ctx, func() (int64, error) {
		return c.q.RetentionDeleteExecutions(ctx, queries.RetentionDeleteExecutionsParams{Cutoff: execCutoff, BatchSize: int32(c.cfg.BatchSize)})
	}); err != nil {
		return r, fmt.Errorf("clean execution log: %w", err)
	}
	if r.Outbox, err = drain(ctx, func() (int64, error) {
		return c.q.RetentionDeleteOutbox(ctx, queries.RetentionDeleteOutboxParams{Cutoff: outboxCutoff, FromWal: c.cfg.FromWAL, BatchSize: int32(c.cfg.BatchSize)})
	}); err != nil {
		return r, fmt.Errorf("clean outbox: %w", err)
	}
	for _, topic := range c.cfg.BrokerTopics {
		n, err := drain(ctx, func() (int64, error) {
			return broker.DeleteConsumed(ctx, c.pool, topic, outboxCutoff, c.cfg.BatchSize)
		})
		r.BrokerMessages += n
		if err != nil {
			return r, fmt.Errorf("clean broker topic %s: %w", topic, err)
		}
	}
	if r != (Result{}) {
		c.cfg.Logger.Info("retention run", "webhook_inbox", r.WebhookInbox, "consumer_inbox", r.ConsumerInbox,
			"executions", r.Executions, "outbox", r.Outbox, "broker_messages", r.BrokerMessages, "inbox_window", c.cfg.InboxWindow.String(),
			"execution_window", c.cfg.ExecutionWindow.String(), "outbox_window", c.cfg.OutboxWindow.String())
	}
	return r, nil
}

// drain repeats one batch delete until a batch comes back empty.
func drain(ctx context.Context, batch func() (int64, error)) (int64, error) {
	var total int64
	for {
		n, err := batch()
		total += n
		if err != nil || n == 0 {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
