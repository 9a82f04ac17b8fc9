package outbox_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// logicalDatabase is a fresh database whose outbox has its slot
// (outbox.EnsureSlot). Where the server's wal_level is not logical the test
// skips, naming the command that sets it; in CI it fails.
func logicalDatabase(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	if _, err := outbox.EnsureSlot(t.Context(), pool); err != nil {
		if errors.Is(err, outbox.ErrNotLogical) && os.Getenv("CI") == "" {
			t.Skipf("the logical relay needs wal_level = logical: run scripts/services.sh (it sets it once on the local cluster): %v", err)
		}
		t.Fatal(err)
	}
	return pool
}

// recorder is the broker as the logical relay sees it: it records the
// message ids it took, in order, and refuses the first refuse publishes.
type recorder struct {
	mu     sync.Mutex
	ids    []string
	refuse int
}

func (p *recorder) Publish(_ string, msgs ...*message.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuse > 0 {
		p.refuse--
		return errors.New("broker unavailable")
	}
	for _, m := range msgs {
		p.ids = append(p.ids, m.UUID)
	}
	return nil
}

func (p *recorder) Close() error { return nil }

func (p *recorder) published() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ids)
}

// startLogical runs a logical relay on pool to out until the test ends or
// the returned stop is called.
func startLogical(t *testing.T, pool *pgxpool.Pool, out message.Publisher, faults *fault.Set) (stop func()) {
	t.Helper()
	relay := outbox.NewLogicalRelay(pool, out, slog.New(slog.DiscardHandler), outbox.RelayConfig{}).WithFaults(faults)
	relay.Wait = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = relay.Run(ctx)
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// confirmationIn writes one order_confirmed into the outbox inside tx and
// returns its message id.
func confirmationIn(t *testing.T, tx pgx.Tx) string {
	t.Helper()
	msg, err := messages.NewOrderConfirmed(uuid.New())
	if err != nil {
		t.Fatal(err)
	}
	if err := outbox.Publish(t.Context(), tx, messages.TopicOrderConfirmed, msg); err != nil {
		t.Fatal(err)
	}
	return msg.UUID
}

// waitPublished waits until out has published every id of want.
func waitPublished(t *testing.T, out *recorder, want ...string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := out.published()
		if !slices.ContainsFunc(want, func(id string) bool { return !slices.Contains(got, id) }) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("published %v, want every one of %v within 10s", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The slot hands the relay the outbox's rows in commit order: a transaction
// that wrote first and committed last is published last (the polling relay
// publishes by transaction id within what it can see). The id of each
// message is the one the outbox wrote, as with the polling relay.
func TestLogicalRelayPublishesInCommitOrder(t *testing.T) {
	t.Parallel()
	pool := logicalDatabase(t)
	out := &recorder{}
	startLogical(t, pool, out, nil)

	first, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(context.Background())
	wroteFirst := confirmationIn(t, first)
	var wroteSecond string
	if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error { wroteSecond = confirmationIn(t, tx); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := waitPublished(t, out, wroteFirst, wroteSecond)
	if want := []string{wroteSecond, wroteFirst}; !slices.Equal(got, want) {
		t.Errorf("published %v, want the commit order %v", got, want)
	}
}

// The slot is told a transaction is done only after the broker took its
// rows. A publish the broker refuses leaves the transaction unconfirmed:
// the relay reads it again and publishes it, never skipping it. A relay
// that stops between the publish and the confirmation publishes the rows
// again (a duplicate the consumers' guards absorb), and then nothing twice.
func TestLogicalRelayConfirmsOnlyWhatTheBrokerTook(t *testing.T) {
	t.Parallel()
	t.Run("the broker refuses a publish", func(t *testing.T) {
		t.Parallel()
		pool := logicalDatabase(t)
		out := &recorder{refuse: 1}
		startLogical(t, pool, out, nil)
		ids := writeLogical(t, pool, 3)
		if got := waitPublished(t, out, ids...); !slices.Equal(got, ids) {
			t.Errorf("published %v, want %v: each once, in order, the refused one included", got, ids)
		}
	})
	t.Run("the relay stops before it confirms", func(t *testing.T) {
		t.Parallel()
		pool := logicalDatabase(t)
		out := &recorder{}
		faults := fault.New(nil)
		faults.Arm(outbox.FaultBeforeConfirm, fault.Fail, 1)
		startLogical(t, pool, out, faults)
		ids := writeLogical(t, pool, 3)
		got := waitPublished(t, out, ids...)
		if want := append([]string{ids[0]}, ids...); !slices.Equal(got, want) {
			t.Errorf("published %v, want %v: the first again after the lost confirmation, then each once", got, want)
		}
	})
}

// writeLogical writes n confirmations, one transaction each, in order.
func writeLogical(t *testing.T, pool *pgxpool.Pool, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		if err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error { ids = append(ids, confirmationIn(t, tx)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// A slot has one reader: a second relay stands by while the first streams,
// publishing nothing, and takes over when the first stops.
func TestLogicalRelaysTakeTurnsOnTheSlot(t *testing.T) {
	t.Parallel()
	pool := logicalDatabase(t)
	first, second := &recorder{}, &recorder{}
	stopFirst := startLogical(t, pool, first, nil)
	before := writeLogical(t, pool, 1)
	waitPublished(t, first, before...)
	startLogical(t, pool, second, nil)
	during := writeLogical(t, pool, 2)
	waitPublished(t, first, during...)
	time.Sleep(200 * time.Millisecond) // the standby's turns: it asks every 50ms
	if got := second.published(); len(got) != 0 {
		t.Fatalf("the standby relay published %v while the first held the slot", got)
	}
	stopFirst()
	after := writeLogical(t, pool, 2)
	if got := waitPublished(t, second, after...); !slices.Equal(got, after) {
		t.Errorf("after the first stopped, the standby published %v, want %v", got, after)
	}
}

// A slot made over rows the polling relay has not relayed would never
// relay them: EnsureSlot refuses, says to drain first, and leaves no slot.
func TestEnsureSlotRefusesOverThePollingBacklog(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	writeConfirmations(t, pool, 2) // before any slot: the polling relay's to relay
	_, err := outbox.EnsureSlot(t.Context(), pool)
	if errors.Is(err, outbox.ErrNotLogical) && os.Getenv("CI") == "" {
		t.Skipf("needs wal_level = logical: run scripts/services.sh: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "2 row(s)") || !strings.Contains(err.Error(), "drain first") {
		t.Fatalf("EnsureSlot over a backlog of 2: %v, want a refusal naming the backlog and saying to drain first", err)
	}
	var slots int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_replication_slots WHERE database = current_database()`).Scan(&slots); err != nil {
		t.Fatal(err)
	}
	if slots != 0 {
		t.Errorf("%d slot(s) left after the refusal, want 0", slots)
	}
}

// A relay over an idle outbox still moves its slot: a keepalive between two
// transactions confirms the server's position, so the WAL that other tables
// write (on a shared server, every other database's too) is not held back by
// a relay with nothing to publish. Without it the slot's confirmed position
// would stay at the last outbox transaction, and the server would keep all
// the WAL written since, until its disk fills.
func TestLogicalRelayIdleMovesItsSlotPastOtherTables(t *testing.T) {
	t.Parallel()
	pool := logicalDatabase(t)
	out := &recorder{}
	startLogical(t, pool, out, nil)
	waitPublished(t, out, writeLogical(t, pool, 1)...)
	var database string
	if err := pool.QueryRow(t.Context(), `SELECT current_database()`).Scan(&database); err != nil {
		t.Fatal(err)
	}
	var last, written string
	if err := pool.QueryRow(t.Context(), `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, outbox.SlotName(database)).Scan(&last); err != nil {
		t.Fatal(err)
	}
	// Writes the publication does not carry: nothing for the relay to publish.
	for _, stmt := range []string{
		`CREATE TABLE not_outbox (n int)`,
		`INSERT INTO not_outbox SELECT generate_series(1, 20000)`,
	} {
		if _, err := pool.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := pool.QueryRow(t.Context(), `SELECT pg_current_wal_lsn()::text`).Scan(&written); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		var confirmed string
		var past bool
		err := pool.QueryRow(t.Context(), `SELECT confirmed_flush_lsn::text, confirmed_flush_lsn >= $2::pg_lsn FROM pg_replication_slots WHERE slot_name = $1`,
			outbox.SlotName(database), written).Scan(&confirmed, &past)
		if err != nil {
			t.Fatal(err)
		}
		if past {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot confirmed %s (after the last outbox transaction: %s), want at least %s, past the other table's writes, within 45s", confirmed, last, written)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := out.published(); len(got) != 1 {
		t.Errorf("published %v, want the one outbox row only", got)
	}
}
