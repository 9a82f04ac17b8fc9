package payment

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// TestRecoverKey pins the race TestPayRecoveryRace can only provoke: several
// requests that all read the key and found its lock expired, then all try to
// take it over at once.
func TestRecoverKey(t *testing.T) {
	t.Parallel()
	pool, o := newTestOrder(t)
	ctx := context.Background()
	// A lease of -1s: a lock that expired a second ago.
	if _, err := queries.New(pool).IdempotencyKeyInsert(ctx, queries.IdempotencyKeyInsertParams{
		Scope: "c1", Key: "k1", Fingerprint: "fp", OrderID: o.ID, LeaseMs: -1000,
	}); err != nil {
		t.Fatal(err)
	}
	s := NewService(pool, nil, Config{LockTimeout: time.Minute})

	t.Run("exactly one of several concurrent recoverers wins", func(t *testing.T) {
		const n = 8
		var wins, inFlight atomic.Int32
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				<-start
				err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
					return s.recoverKey(ctx, queries.New(tx), &claimed{scope: "c1", key: "k1"})
				})
				var ife *InFlightError
				switch {
				case err == nil:
					wins.Add(1)
				case errors.As(err, &ife):
					inFlight.Add(1)
				default:
					t.Errorf("recover: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || inFlight.Load() != n-1 {
			t.Fatalf("wins = %d, in flight = %d; want 1 and %d", wins.Load(), inFlight.Load(), n-1)
		}
	})
}

func TestInFlightRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		remaining, want time.Duration
	}{
		{-time.Second, time.Second},
		{0, time.Second},
		{time.Millisecond, time.Second},
		{time.Second, time.Second},
		{time.Second + time.Nanosecond, 2 * time.Second},
		{29900 * time.Millisecond, 30 * time.Second},
	} {
		if got := inFlight(tc.remaining).RetryAfter; got != tc.want {
			t.Errorf("inFlight(%s).RetryAfter = %s, want %s", tc.remaining, got, tc.want)
		}
	}
}
