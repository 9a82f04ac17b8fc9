package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Publication is the publication the logical relay's slot reads: the
// inserts into the outbox table, nothing else.
const Publication = "orderpaid_outbox"

// ErrNotLogical: the server's wal_level is not logical, which a slot needs.
var ErrNotLogical = errors.New("OUTBOX_RELAY=logical needs wal_level = logical on the PostgreSQL server " +
	"(run scripts/services.sh on the local cluster, or ALTER SYSTEM SET wal_level = logical and restart it), or set OUTBOX_RELAY=poll")

// SlotName is the logical relay's replication slot of the database
// database: slots belong to the server, not to a database, so the name
// carries the database's (lower case, [a-z0-9_], at most 63 characters).
// A database name that does not fit as it is (too long, or with other
// characters) gets the first 8 hex digits of its SHA-256 at the end: two
// databases whose names share their first 45 characters, or differ only in
// case or punctuation, must never share a slot, or each relay would read,
// confirm and drop the other's.
func SlotName(database string) string {
	const prefix, max = "orderpaid_outbox_", 63
	name := prefix + nonSlot.ReplaceAllString(strings.ToLower(database), "_")
	if name == prefix+database && len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(database))
	tag := "_" + hex.EncodeToString(sum[:4])
	return name[:min(len(name), max-len(tag))] + tag
}

var nonSlot = regexp.MustCompile(`[^a-z0-9_]`)

// EnsureSlot creates the logical relay's publication and slot in pool's
// database unless they exist, and returns the slot's name. Every process
// that writes the outbox with OUTBOX_RELAY=logical calls it at start (the
// api and the worker), so the slot exists before the first row it must
// relay: a row committed before the slot was created is not in it.
//
// That is also the rule for switching from the polling relay: a slot
// created over rows the polling relay has not relayed (its backlog) would
// never relay them, so EnsureSlot drops the slot it just made and refuses.
// Drain first: run the worker with OUTBOX_RELAY=poll until the outbox
// backlog is 0, stop it, then start with logical.
func EnsureSlot(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var level, database string
	if err := pool.QueryRow(ctx, `SELECT current_setting('wal_level'), current_database()`).Scan(&level, &database); err != nil {
		return "", fmt.Errorf("read wal_level: %w", err)
	}
	if level != "logical" {
		return "", fmt.Errorf("wal_level is %s: %w", level, ErrNotLogical)
	}
	slot := SlotName(database)
	if _, err := pool.Exec(ctx, `CREATE PUBLICATION `+Publication+` FOR TABLE watermill_outbox WITH (publish = 'insert')`); err != nil && !isDuplicate(err) {
		return "", fmt.Errorf("create publication %s: %w", Publication, err)
	}
	_, err := pool.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, slot)
	switch {
	case isDuplicate(err):
		return slot, nil
	case err != nil:
		return "", fmt.Errorf("create replication slot %s: %w", slot, err)
	}
	backlog, err := queries.New(pool).OutboxBacklog(ctx)
	if err == nil && backlog == 0 {
		return slot, nil
	}
	if dropErr := drop(ctx, pool, slot); dropErr != nil {
		err = errors.Join(err, dropErr)
	}
	if err != nil {
		return "", fmt.Errorf("check the polling relay's backlog after creating slot %s: %w", slot, err)
	}
	return "", fmt.Errorf("the outbox has %d row(s) the polling relay has not relayed, and a slot made now would never relay them: "+
		"drain first (run the worker with OUTBOX_RELAY=poll until its outbox backlog is 0, stop it), then start with OUTBOX_RELAY=logical", backlog)
}

// SlotLag is how far the slot of pool's database is behind: the WAL it
// keeps on the server (since its restart position) and what it has not
// confirmed, in bytes. ok is false when there is no slot.
func SlotLag(ctx context.Context, pool *pgxpool.Pool) (retained, unconfirmed int64, ok bool, err error) {
	err = pool.QueryRow(ctx, `SELECT coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint,
	       coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn), 0)::bigint
	FROM pg_replication_slots WHERE slot_name = $1`, SlotName(pool.Config().ConnConfig.Database)).Scan(&retained, &unconfirmed)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, false, nil
	}
	return retained, unconfirmed, err == nil, err
}

// replicationConn opens a replication connection (replication=database) to
// pool's database, and returns it with the database's slot name.
func replicationConn(ctx context.Context, pool *pgxpool.Pool) (*pgconn.PgConn, string, error) {
	cfg := pool.Config().ConnConfig.Config.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["replication"] = "database"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, "", fmt.Errorf("open a replication connection to %s: %w", cfg.Database, err)
	}
	return conn, SlotName(cfg.Database), nil
}

// isDuplicate reports whether err is PostgreSQL's duplicate_object
// (SQLSTATE 42710): the publication or the slot exists.
func isDuplicate(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42710"
}

// decoder turns the slot's pgoutput messages into outbox rows, a
// transaction at a time.
type decoder struct {
	relations map[uint32]*pglogrepl.RelationMessage
	inTx      bool
	rows      []*message.Message
}

// decode takes one message of the stream. At a transaction's commit it
// returns the transaction's rows (their payload column: the envelope) and
// the transaction's end, the position to confirm once they are published;
// otherwise end is 0.
func (d *decoder) decode(walData []byte) (rows []*message.Message, end pglogrepl.LSN, err error) {
	msg, err := pglogrepl.Parse(walData)
	if err != nil {
		return nil, 0, fmt.Errorf("decode a pgoutput message: %w", err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		d.relate(m)
	case *pglogrepl.BeginMessage:
		d.inTx, d.rows = true, nil
	case *pglogrepl.InsertMessage:
		row, err := d.row(m)
		if err != nil {
			return nil, 0, err
		}
		d.rows = append(d.rows, row)
	case *pglogrepl.CommitMessage:
		d.inTx = false
		return d.rows, m.TransactionEndLSN, nil
	}
	return nil, 0, nil
}

// relate takes the stream's description of a relation, which the inserts
// into it refer to.
func (d *decoder) relate(m *pglogrepl.RelationMessage) {
	if d.relations == nil {
		d.relations = map[uint32]*pglogrepl.RelationMessage{}
	}
	d.relations[m.RelationID] = m
}

// row is an inserted outbox row as the polling relay reads it: a message
// whose payload is the envelope (the payload column) and whose UUID is the
// row's own (the uuid column).
func (d *decoder) row(m *pglogrepl.InsertMessage) (*message.Message, error) {
	cols, err := d.columns(m)
	if err != nil {
		return nil, err
	}
	if cols["payload"] == nil {
		rel := d.relations[m.RelationID]
		return nil, fmt.Errorf("an insert into %s.%s without a payload", rel.Namespace, rel.RelationName)
	}
	return message.NewMessage(string(cols["uuid"]), cols["payload"]), nil
}

// columns returns an insert's values in text, by column name.
func (d *decoder) columns(m *pglogrepl.InsertMessage) (map[string][]byte, error) {
	rel, ok := d.relations[m.RelationID]
	if !ok {
		return nil, fmt.Errorf("an insert into relation %d, which the stream never described", m.RelationID)
	}
	cols := make(map[string][]byte, len(rel.Columns))
	for i, col := range m.Tuple.Columns {
		if i < len(rel.Columns) && col.DataType == pglogrepl.TupleDataTypeText {
			cols[rel.Columns[i].Name] = col.Data
		}
	}
	return cols, nil
}
