package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A slot nobody reads.
//
// Failure it prevents: the server's disk filling up, silently. A logical
// replication slot keeps every WAL segment written since its last
// confirmation, for every table of the cluster, until its reader confirms
// again. After a switch back to OUTBOX_RELAY=poll nothing reads the outbox's
// slot any more: on a shared server, slots left so held 600 MB of WAL after
// 17 minutes. So the worker looks at the database's slots at start, whatever
// its relay (TidySlots), and `orderpaid doctor` fails on such a slot
// (IdleSlots).

// IdleSlot is a logical replication slot of the database that no connection
// reads and that holds WAL on the server.
type IdleSlot struct {
	Name string
	WAL  int64 // bytes of WAL the server keeps for it (since its restart position)
	// Outbox: it is the logical relay's slot of this database (SlotName).
	Outbox bool
}

// Held is WAL in KiB or MiB, for a person to read.
func (s IdleSlot) Held() string {
	if s.WAL < 1<<20 {
		return fmt.Sprintf("%d KiB", s.WAL>>10)
	}
	return fmt.Sprintf("%d MiB", s.WAL>>20)
}

// DropCommand is the command that drops the slot.
func (s IdleSlot) DropCommand() string {
	return fmt.Sprintf(`psql "$DATABASE_URL" -c "SELECT pg_drop_replication_slot('%s')"`, s.Name)
}

// catalog is what IdleSlots reads through: a pool (the worker) or one
// connection (the doctor).
type catalog interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// IdleSlots lists the logical replication slots of db's database that no
// connection reads and that hold WAL (an invalidated slot holds none).
func IdleSlots(ctx context.Context, db catalog) ([]IdleSlot, error) {
	rows, err := db.Query(ctx, `SELECT slot_name, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint, current_database()
	FROM pg_replication_slots
	WHERE database = current_database() AND NOT active AND restart_lsn IS NOT NULL
	ORDER BY slot_name`)
	if err != nil {
		return nil, fmt.Errorf("read the replication slots: %w", err)
	}
	slots, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (IdleSlot, error) {
		var s IdleSlot
		var database string
		err := row.Scan(&s.Name, &s.WAL, &database)
		s.Outbox = s.Name == SlotName(database)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the replication slots: %w", err)
	}
	return slots, nil
}

// peekTimeout bounds the read of what a slot holds: a slot that held WAL
// for long has much of it to decode.
const peekTimeout = time.Minute

// TidySlots is the worker's look at the slots of pool's database at start.
// Each slot nobody reads that holds WAL is a warning naming it, the WAL it
// holds and the command that drops it; the outbox's own slot is left alone
// when logical (this worker's relay is about to read it).
//
// With the polling relay (logical false), the outbox's slot is dropped when
// that cannot lose a message: every outbox row the slot holds unconfirmed
// is still in the outbox, ahead of the polling relay, which will publish it
// (pollCovers). Call it before the polling relay starts: once that relay
// has moved past the slot's rows, this worker cannot tell they were
// published, and only warns.
func TidySlots(ctx context.Context, pool *pgxpool.Pool, logical bool, logger *slog.Logger) {
	slots, err := IdleSlots(ctx, pool)
	if err != nil {
		logger.WarnContext(ctx, "replication slots not checked", "err", err)
		return
	}
	for _, s := range slots {
		why := "nothing reads it; if nothing will again, drop it"
		switch {
		case s.Outbox && logical:
			continue
		case s.Outbox:
			if why = dropIfCovered(ctx, pool, s, logger); why == "" {
				continue
			}
		}
		logger.WarnContext(ctx, "replication slot with no reader holds WAL, and the server keeps more with every write until its disk fills",
			"slot", s.Name, "wal", s.Held(), "wal_bytes", s.WAL, "drop", s.DropCommand(), "why", why)
	}
}

// dropIfCovered drops the outbox's slot s, nobody's with the polling relay,
// when the polling relay will publish all it holds, and says why not
// otherwise ("" once dropped).
func dropIfCovered(ctx context.Context, pool *pgxpool.Pool, s IdleSlot, logger *slog.Logger) (why string) {
	held, covered, err := pollCovers(ctx, pool, s.Name)
	if err == nil && covered {
		if err = drop(ctx, pool, s.Name); err == nil {
			logger.InfoContext(ctx, "outbox slot dropped: OUTBOX_RELAY=poll, and the polling relay publishes all it held",
				"slot", s.Name, "wal", s.Held(), "held_rows", held)
			return ""
		}
	}
	if err != nil {
		return fmt.Sprintf("OUTBOX_RELAY=poll reads no slot, and this one was not dropped (%v): drop it once the polling relay "+
			"has published what it holds, or read it with OUTBOX_RELAY=logical", err)
	}
	return fmt.Sprintf("OUTBOX_RELAY=poll reads no slot, and this one holds %d outbox row(s) not all ahead of the polling relay "+
		"(relayed by it already, or removed by retention): drop it once they were published, or read it with OUTBOX_RELAY=logical", held)
}

// pollCovers reads what slot holds and has not confirmed (a peek, which
// moves nothing) and reports whether the polling relay will publish all of
// it: every outbox row in it is still in the outbox, after the position of
// every relay lane. held is how many rows it holds.
func pollCovers(ctx context.Context, pool *pgxpool.Pool, slot string) (held int, covered bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, peekTimeout)
	defer cancel()
	txs, offsets, err := peekHeld(ctx, pool, slot)
	if err != nil {
		return 0, false, err
	}
	ahead, err := queries.New(pool).OutboxRowsAheadOfTheRelay(ctx, queries.OutboxRowsAheadOfTheRelayParams{TransactionIds: txs, Offsets: offsets})
	if err != nil {
		return 0, false, fmt.Errorf("compare slot %s with the polling relay: %w", slot, err)
	}
	return len(txs), ahead == int64(len(txs)), nil
}

// peekHeld reads what slot holds and has not confirmed, the outbox rows of
// the transactions committed since its confirmed position, without moving
// it (a peek), and returns their keys in text: transaction ids and offsets,
// pair by pair.
func peekHeld(ctx context.Context, pool *pgxpool.Pool, slot string) (txs, offsets []string, err error) {
	rows, err := pool.Query(ctx, `SELECT data FROM pg_logical_slot_peek_binary_changes($1, NULL, NULL, 'proto_version', '1', 'publication_names', $2)`,
		slot, Publication)
	if err != nil {
		return nil, nil, fmt.Errorf("read slot %s: %w", slot, err)
	}
	defer rows.Close()
	var d decoder
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, nil, fmt.Errorf("read slot %s: %w", slot, err)
		}
		msg, err := pglogrepl.Parse(data)
		if err != nil {
			return nil, nil, fmt.Errorf("decode a pgoutput message of slot %s: %w", slot, err)
		}
		switch m := msg.(type) {
		case *pglogrepl.RelationMessage:
			d.relate(m)
		case *pglogrepl.InsertMessage:
			cols, err := d.columns(m)
			if err != nil {
				return nil, nil, err
			}
			txs, offsets = append(txs, string(cols["transaction_id"])), append(offsets, string(cols["offset"]))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read slot %s: %w", slot, err)
	}
	return txs, offsets, nil
}

// drop drops slot.
func drop(ctx context.Context, pool *pgxpool.Pool, slot string) error {
	if _, err := pool.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot); err != nil {
		return fmt.Errorf("drop slot %s: %w", slot, err)
	}
	return nil
}
