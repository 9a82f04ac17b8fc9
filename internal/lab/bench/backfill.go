package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
)

// BackfillResult is the backfill run: how long the worker took to handle a
// backfill of Orders already-paid orders and how much memory it needed.
type BackfillResult struct {
	Orders int
	// Enqueue is how long `orderpaid backfill` took to write the outbox.
	Enqueue time.Duration
	// Elapsed runs from the start of the backfill to the last execution.
	Elapsed time.Duration
	// WorkerPeakRSSKB is the worker's VmHWM at the end.
	WorkerPeakRSSKB int64
	Usage           []Usage
	// BatchSize is the worker's CONSUMER_BATCH_SIZE (0 or 1: per message).
	BatchSize int
}

// RunBackfill seeds n paid orders, starts fakes and one worker, runs
// `orderpaid backfill` over them as an operator would, and waits until the
// worker has handled every order_paid it enqueued. Each message is a
// redelivery of a fact already applied (the order is paid), so this measures
// the steady cost of repetition and whether the worker's memory stays flat.
func RunBackfill(ctx context.Context, cfg Config, n, batchSize int) (res BackfillResult, err error) {
	cfg = cfg.withDefaults()
	d, err := CreateDatabase(ctx, cfg.AdminURL, "orderpaid_bench")
	if err != nil {
		return res, err
	}
	if !cfg.Keep {
		defer func() { err = errors.Join(err, d.Drop()) }()
	}
	paidAt := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	fmt.Fprintf(cfg.Progress, "bench: backfill: seeding %d paid orders\n", n)
	if _, err := labqueries.New(d.Pool).BenchSeedPaidOrders(ctx, labqueries.BenchSeedPaidOrdersParams{PaidAt: paidAt, Count: int32(n)}); err != nil {
		return res, fmt.Errorf("seed paid orders: %w", err)
	}
	if err := d.Settle(ctx, "orders"); err != nil {
		fmt.Fprintf(cfg.Progress, "bench: backfill: warning: %v\n", err)
	}
	prefix := "b" + RandomHex(4) + "_"
	defer func() {
		err = errors.Join(err, DeleteTopology(cfg.Broker, cfg.AMQPURL, cfg.NATSURL, cfg.KafkaBrokers, prefix))
	}()
	logDir, err := runLogDir(cfg.LogDir, "backfill")
	if err != nil {
		return res, err
	}
	stack, err := StartStack(ctx, StackConfig{Binary: cfg.Binary, LogDir: logDir, DatabaseURL: d.URL,
		Broker: cfg.Broker, AMQPURL: cfg.AMQPURL, NATSURL: cfg.NATSURL, KafkaBrokers: cfg.KafkaBrokers, Prefix: prefix, NoAPI: true, BatchSize: batchSize,
		OutboxRelay: cfg.Relay})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, stack.Stop()) }()

	before := takeUsage(stack, cfg)
	start := time.Now()
	op, err := StartProc(cfg.Binary, logDir, "backfill", []string{"DATABASE_URL=" + d.URL},
		[]string{"backfill", "--from", paidAt.Add(-time.Second).Format(time.RFC3339), "--to", paidAt.Add(time.Second).Format(time.RFC3339)})
	if err != nil {
		return res, err
	}
	if _, err := op.WaitLine(ctx, "backfill: done", time.Hour); err != nil {
		return res, err
	}
	res = BackfillResult{Orders: n, Enqueue: time.Since(start), BatchSize: batchSize}
	fmt.Fprintf(cfg.Progress, "bench: backfill: %d order_paid enqueued in %s; waiting for the worker\n", n, res.Enqueue.Round(time.Second))
	q := labqueries.New(d.Pool)
	lastReport := time.Now()
	for {
		// Counting a million rows every second would cost the run a tenth
		// of a core: the newest id says when counting is worth it.
		newest, err := q.BenchExecutionsMaxID(ctx)
		if err != nil {
			return res, fmt.Errorf("read the execution log: %w", err)
		}
		done := int64(0)
		if newest >= int64(n) {
			if done, err = q.BenchExecutionCount(ctx, consumer.HandlerOrderPaid); err != nil {
				return res, fmt.Errorf("count executions: %w", err)
			}
		}
		if done >= int64(n) {
			break
		}
		if time.Since(lastReport) >= 30*time.Second {
			// The newest id runs a little ahead of the count (retries are
			// executions too): enough to show the run is moving.
			lastReport = time.Now()
			fmt.Fprintf(cfg.Progress, "bench: backfill: about %d of %d handled after %s\n", min(newest, int64(n)), n, time.Since(start).Round(time.Second))
		}
		if stack.Workers()[0].Exited() {
			return res, fmt.Errorf("the worker exited after about %d of %d executions; see %s", newest, n, stack.Workers()[0].LogPath())
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	res.Elapsed = time.Since(start)
	res.Usage = usageBetween(before, takeUsage(stack, cfg), res.Elapsed)
	for _, u := range res.Usage {
		if u.Name == "worker1" {
			res.WorkerPeakRSSKB = u.PeakRSSKB
		}
	}
	return res, nil
}
