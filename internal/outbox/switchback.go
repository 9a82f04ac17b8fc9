package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// The switch back from the WAL to polling.
//
// Failure it prevents: a month of messages published again. The logical
// relay publishes from its slot and never moves the polling relay's
// positions (watermill's offset rows, one per lane), so a worker started
// again with OUTBOX_RELAY=poll found them where polling last left them and
// republished every row retention kept, up to 30 days of them, while the
// consumers' inbox remembers 7: the older repeats were applied again.
//
// SwitchBack moves each lane's position to where the slot stopped, before
// the polling relay starts and before TidySlots drops the slot, which is
// the only record of what was published. What the slot published is every
// row of a transaction committed before its confirmed position (the rows
// committed before the slot was made, the polling relay had published:
// EnsureSlot refuses a slot made over its backlog). What it did not: the rows it holds unconfirmed (a peek), and the rows of
// transactions still open. Transaction ids are not in commit order, and
// the polling relay reads in id order, so a lane's new position is its last
// row below the horizon (no transaction of this database under it is still
// open: outboxHorizon) and before
// the first row the slot holds: every row at or before it was published,
// and none can still come at or before it. A few rows the slot published
// may lie after it and go out again, which the consumers' guards absorb;
// none is ever skipped. The query is OutboxRelayMovePastTheSlot.

// flushWait bounds the wait for the WAL to be flushed up to the horizon's
// position (see switchBack), releaseWait the wait for the slot's last
// reader to let go of it (waitUnread).
const (
	flushWait   = 10 * time.Second
	releaseWait = 5 * time.Second
)

// SwitchBack starts the polling relay where the outbox's logical relay
// stopped: it moves each relay lane's position forward past the rows the
// slot published, and logs how many rows that skipped. Call it on a worker
// with the polling relay, before TidySlots and before the relay starts.
// Without a slot there is nothing to do. When the slot cannot be read (a
// logical relay still streams from it, it was invalidated) the positions
// stay where they are: the polling relay publishes again what the slot
// published, which is what it did before this step, and the warning says
// so.
func SwitchBack(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) {
	moved, err := switchBack(ctx, pool)
	if err != nil {
		logger.WarnContext(ctx, "outbox relay positions not moved past what the logical relay published: "+
			"the polling relay publishes those rows again (the consumers' guards absorb the repeats)", "err", err)
		return
	}
	if moved == nil {
		return
	}
	var skipped int64
	for _, m := range moved {
		skipped += m.Skipped
	}
	logger.InfoContext(ctx, "outbox relay switched back from the WAL: the polling relay starts where the slot stopped",
		"skipped_as_published", skipped, "lanes_moved", len(moved))
	for _, m := range moved {
		logger.InfoContext(ctx, "outbox relay lane moved past rows the slot published", "group", m.ConsumerGroup,
			"transaction_id", m.PositionTransactionID, "offset", m.PositionOffset, "skipped", m.Skipped)
	}
}

// switchBack does SwitchBack's work; moved is nil when there is no slot,
// empty when no lane had to move.
func switchBack(ctx context.Context, pool *pgxpool.Pool) (moved []queries.OutboxRelayMovePastTheSlotRow, err error) {
	slot := SlotName(pool.Config().ConnConfig.Database)
	exists, err := waitUnread(ctx, pool, slot)
	if !exists || err != nil {
		return nil, err
	}
	// The horizon first, the peek after: a transaction under the horizon
	// has ended (or belongs to another database, and so has no row in this
	// outbox), and its commit record is before the WAL position read after
	// it, so the peek sees it held if the slot did not publish it. With
	// synchronous_commit off that record may not be flushed yet, and a
	// peek reads only flushed WAL: wait for it, or a transaction that
	// committed just then would be neither open nor held, and be skipped.
	horizon, err := outboxHorizon(ctx, pool)
	if err != nil {
		return nil, err
	}
	var written string
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&written); err != nil {
		return nil, fmt.Errorf("read the WAL position: %w", err)
	}
	if err := waitFlushed(ctx, pool, written); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, peekTimeout)
	defer cancel()
	txs, offsets, err := peekHeld(ctx, pool, slot)
	if err != nil {
		return nil, err
	}
	moved, err = queries.New(pool).OutboxRelayMovePastTheSlot(ctx, queries.OutboxRelayMovePastTheSlotParams{
		TransactionIds: txs, Offsets: offsets, Horizon: horizon,
	})
	if err != nil {
		return nil, fmt.Errorf("move the relay's positions past slot %s: %w", slot, err)
	}
	return moved, nil
}

// outboxHorizon is the oldest transaction id that may still write a row
// into this database's outbox: the oldest transaction open in this database,
// or, with none open, the next id to be given. Transaction ids are the
// server's, and so is pg_snapshot_xmin: one transaction left open for
// minutes in another database (another application, a report, a test of
// another package on a shared server) would hold every lane back to rows
// written before it began, and the polling relay would publish them all
// again, the failure the switch is for. Such a transaction cannot write
// here (a transaction reads and writes the tables of its own database), so
// an open id is passed over only when pg_stat_activity (or
// pg_prepared_xacts) shows it open in another database; one of this
// database, of a process with no database, or one that ended meanwhile
// (it is in neither view any more) still bounds the horizon: more rows go
// out again, none is lost. A database is a connection's for its life, so
// what the views show after the snapshot holds for the id in it.
func outboxHorizon(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var horizon string
	err := pool.QueryRow(ctx, `
SELECT coalesce(
    (SELECT min(x) FROM pg_snapshot_xip(s.snap) AS x
     WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                       WHERE a.backend_xid = x::xid AND a.datname <> current_database())
       AND NOT EXISTS (SELECT 1 FROM pg_prepared_xacts p
                       WHERE p.transaction = x::xid AND p.database <> current_database())),
    pg_snapshot_xmax(s.snap))::text
FROM (SELECT pg_current_snapshot() AS snap) s`).Scan(&horizon)
	if err != nil {
		return "", fmt.Errorf("read the horizon: %w", err)
	}
	return horizon, nil
}

// waitUnread waits until no connection reads slot: a logical relay that
// has just stopped (a deploy that restarts the worker at once) leaves its
// server process reading the slot for a moment after. exists is false when
// there is no slot; err says when it is still read after releaseWait.
func waitUnread(ctx context.Context, pool *pgxpool.Pool, slot string) (exists bool, err error) {
	deadline := time.Now().Add(releaseWait)
	for {
		var active bool
		err := pool.QueryRow(ctx, `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&active)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("read slot %s: %w", slot, err)
		case !active:
			return true, nil
		case time.Now().After(deadline):
			return true, fmt.Errorf("slot %s is still read by another process after %s (a worker with OUTBOX_RELAY=logical still running?)", slot, releaseWait)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return true, err
		}
	}
}

// waitFlushed waits until the server has flushed its WAL up to lsn.
func waitFlushed(ctx context.Context, pool *pgxpool.Pool, lsn string) error {
	deadline := time.Now().Add(flushWait)
	for {
		var flushed bool
		if err := pool.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, lsn).Scan(&flushed); err != nil {
			return fmt.Errorf("read the flushed WAL position: %w", err)
		}
		if flushed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the WAL is not flushed up to %s after %s", lsn, flushWait)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
