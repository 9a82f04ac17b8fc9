package bench

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// The statements in this file administer the server (checkpoint a database,
// read its settings, wal_level among them; internal/lab/tempdb creates and
// drops it): sqlc
// generates queries against the schema, not DDL naming a database, so they
// are the only SQL written in Go in this package. Everything else goes through internal/platform/queries (the service's) and internal/lab/labqueries (the lab's).

// Database is a throw-away database for one run.
type Database struct {
	Name, URL string
	Pool      *pgxpool.Pool
	adminURL  string
}

// CreateDatabase creates and migrates a fresh database on the server of
// adminURL. Drop it with Drop.
func CreateDatabase(ctx context.Context, adminURL, prefix string) (*Database, error) {
	name := prefix + "_" + tempdb.RandomHex(4)
	dbURL, err := tempdb.Create(ctx, adminURL, name)
	if err != nil {
		return nil, err
	}
	d := &Database{Name: name, URL: dbURL, adminURL: adminURL}
	if d.Pool, err = postgres.Connect(ctx, d.URL); err != nil {
		return nil, err
	}
	if err := postgres.Migrate(ctx, d.Pool, io.Discard); err != nil {
		d.Drop()
		return nil, fmt.Errorf("migrate database %s: %w", name, err)
	}
	return d, nil
}

// Drop closes the pool and drops the database, disconnecting what is left.
func (d *Database) Drop() error {
	d.Pool.Close()
	return tempdb.Drop(d.adminURL, d.Name)
}

// Settle refreshes the planner's statistics of the tables seeded (VACUUM
// ANALYZE, as autovacuum would on a live server) and writes the dirty pages
// out (CHECKPOINT), so that seeding is not billed to the run that follows.
//
// Only tables with rows: statistics taken of an empty table say "empty",
// and the plans cached from them (a sequential scan costs nothing on an
// empty table) stay in every pooled connection as the table grows, unless
// autovacuum re-analyses it, which this CI server does not (autovacuum =
// off). See docs/performance.md.
func (d *Database) Settle(ctx context.Context, tables ...string) error {
	stmts := []string{"CHECKPOINT"}
	if len(tables) > 0 {
		idents := make([]string, len(tables))
		for i, t := range tables {
			idents[i] = pgx.Identifier{t}.Sanitize()
		}
		stmts = append([]string{"VACUUM ANALYZE " + strings.Join(idents, ", ")}, stmts...)
	}
	for _, stmt := range stmts {
		if _, err := d.Pool.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s on %s: %w", stmt, d.Name, err)
		}
	}
	return nil
}

// ServerInfo describes the server for the report: version and the settings
// that decide write throughput.
func ServerInfo(ctx context.Context, pool *pgxpool.Pool) string {
	var version, syncCommit, buffers, maxConns string
	err := pool.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('synchronous_commit'), "+
		"current_setting('shared_buffers'), current_setting('max_connections')").Scan(&version, &syncCommit, &buffers, &maxConns)
	if err != nil {
		return "PostgreSQL (settings unreadable: " + err.Error() + ")"
	}
	return fmt.Sprintf("PostgreSQL %s, synchronous_commit=%s, shared_buffers=%s, max_connections=%s", version, syncCommit, buffers, maxConns)
}

// RequireLogical returns outbox.ErrNotLogical, with the server's setting,
// unless the server of adminURL runs with wal_level = logical, which the
// relay from the WAL (OUTBOX_RELAY=logical) needs.
func RequireLogical(ctx context.Context, adminURL string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to read wal_level: %w", err)
	}
	defer conn.Close(context.Background())
	var level string
	if err := conn.QueryRow(ctx, "SELECT current_setting('wal_level')").Scan(&level); err != nil {
		return fmt.Errorf("read wal_level: %w", err)
	}
	if level != "logical" {
		return fmt.Errorf("bench: --relay logical: the server's wal_level is %s: %w", level, outbox.ErrNotLogical)
	}
	return nil
}

// RandomHex returns 2n random hex digits, for names no other run uses.
func RandomHex(n int) string { return tempdb.RandomHex(n) }
