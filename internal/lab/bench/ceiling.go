package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Ceiling is the machine's throughput for the transaction of one effect
// step, the yardstick every other number is divided by.
type Ceiling struct {
	Workers int
	Txs     int
	Elapsed time.Duration
	// ClientCPU and ServerCPU are the CPU time the load generator and
	// PostgreSQL used for it.
	ClientCPU, ServerCPU time.Duration
}

// PerSecond is the transactions per second.
func (c Ceiling) PerSecond() float64 { return float64(c.Txs) / c.Elapsed.Seconds() }

// MeasureCeiling runs the effect step of the order_paid consumer, pgbench
// style: workers goroutines, each in a loop, one transaction per pending
// order of txs seeded ones: the state check UPDATE, the transition row and
// the confirmation written to the outbox, committed (with the server's
// synchronous_commit). It is the same code the consumer runs
// (order.MarkPaid, outbox.Publish, postgres.InTx), without the broker, the
// relay, HTTP or the other steps, on a pool as large as the worker's.
func MeasureCeiling(ctx context.Context, pool *pgxpool.Pool, workers, txs int) (Ceiling, error) {
	orders, err := SeedPendingOrders(ctx, pool, txs)
	if err != nil {
		return Ceiling{}, err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	client, server := selfCPU(), groupCPU("postgres")
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(orders) {
					return
				}
				if err := effectStep(ctx, pool, orders[i]); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	c := Ceiling{Workers: workers, Txs: len(orders), Elapsed: time.Since(start),
		ClientCPU: selfCPU() - client, ServerCPU: groupCPU("postgres") - server}
	select {
	case err := <-errc:
		return c, fmt.Errorf("ceiling transaction: %w", err)
	default:
	}
	return c, nil
}

// effectStep is step 1 of the order_paid consumer for one order.
func effectStep(ctx context.Context, pool *pgxpool.Pool, o Order) error {
	return postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		msgID := "ceiling/" + o.ID.String()
		outcome, _, err := order.MarkPaid(ctx, queries.New(tx), o.ID, msgID)
		if err != nil {
			return err
		}
		if outcome != effect.Applied {
			return fmt.Errorf("order %s was not pending (%s)", o.ID, outcome)
		}
		msg, err := messages.NewOrderConfirmed(o.ID)
		if err != nil {
			return err
		}
		return outbox.Publish(ctx, tx, messages.TopicOrderConfirmed, msg)
	})
}

// SeedPendingOrders creates n pending orders with an affiliate in one
// statement and returns them.
func SeedPendingOrders(ctx context.Context, pool *pgxpool.Pool, n int) ([]Order, error) {
	rows, err := labqueries.New(pool).BenchSeedPendingOrders(ctx, int32(n))
	if err != nil {
		return nil, fmt.Errorf("seed %d pending orders: %w", n, err)
	}
	out := make([]Order, len(rows))
	for i, r := range rows {
		out[i] = Order{ID: r.ID, AmountCents: r.AmountCents}
	}
	return out, nil
}
