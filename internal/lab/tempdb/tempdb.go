// Package tempdb makes the lab's throwaway PostgreSQL databases: one for each
// test, scenario, benchmark or soak run, created on the server of an admin
// URL under a name no other run uses, and dropped when the run ends. The
// tests' migrated copies (pgtest), the scenarios' empty databases that
// `orderpaid migrate` fills, and the benchmark's and soak's databases are all
// made here.
//
// The statements in this package administer the server (create, drop, set a
// per-database parameter): sqlc generates queries against the schema, not DDL
// naming a database, so they are written in Go.
package tempdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// RandomHex returns 2n random hex digits, for names no other run uses:
// databases, topics, broker prefixes.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (Go 1.24+)
	return hex.EncodeToString(b)
}

// Create creates an empty database called name on the server of adminURL
// and returns its URL: adminURL with the database replaced.
func Create(ctx context.Context, adminURL, name string) (dbURL string, err error) {
	if err := Exec(ctx, adminURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s (does the DATABASE_URL role have CREATEDB?): %w", name, err)
	}
	return URL(adminURL, name)
}

// CreateFrom creates the database name as a copy of template, waiting while
// another session still uses the template (PostgreSQL copies a template
// only while nobody is connected to it), and returns its URL.
func CreateFrom(ctx context.Context, adminURL, name, template string) (dbURL string, err error) {
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	for attempt := 0; attempt < 20; attempt++ {
		err = Exec(ctx, adminURL, stmt)
		if err == nil || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return "", fmt.Errorf("create database %s from %s: %w", name, template, err)
	}
	return URL(adminURL, name)
}

// Drop drops the database name, disconnecting whatever is still connected.
func Drop(adminURL, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dropSlots(ctx, adminURL, name); err != nil {
		return err
	}
	if err := Exec(ctx, adminURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s (drop it by hand with psql): %w", name, err)
	}
	return nil
}

// dropSlots drops the replication slots of database name
// (OUTBOX_RELAY=logical): a database with a slot cannot be dropped, and a
// slot left behind would keep WAL on the server forever. A slot's reader
// goes first (pg_terminate_backend waits up to 5s for it to exit); a reader
// that was still going away, or came back, is asked again, for up to 10s.
func dropSlots(ctx context.Context, adminURL, name string) error {
	db := quoteLiteral(name)
	var err error
	for range 20 {
		err = errors.Join(
			Exec(ctx, adminURL, "SELECT pg_terminate_backend(active_pid, 5000) FROM pg_replication_slots WHERE database = "+db+" AND active_pid IS NOT NULL"),
			Exec(ctx, adminURL, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = "+db+" AND NOT active"))
		left, countErr := countSlots(ctx, adminURL, name)
		if countErr == nil && left == 0 {
			return nil
		}
		err = errors.Join(err, countErr, fmt.Errorf("%d slot(s) left", left))
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("drop the replication slots of database %s (drop them by hand: SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s): %w", name, db, err)
}

// countSlots is how many replication slots database name has.
func countSlots(ctx context.Context, adminURL, name string) (int, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE database = $1", name).Scan(&n)
	return n, err
}

// SetParameter sets a server parameter for every new session on the
// database name, such as idle_in_transaction_session_timeout.
func SetParameter(ctx context.Context, adminURL, name, param, value string) error {
	stmt := fmt.Sprintf("ALTER DATABASE %s SET %s = %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{param}.Sanitize(), quoteLiteral(value))
	if err := Exec(ctx, adminURL, stmt); err != nil {
		return fmt.Errorf("set %s on database %s: %w", param, name, err)
	}
	return nil
}

// Exec runs one administration statement on a connection of its own to the
// server of adminURL.
func Exec(ctx context.Context, adminURL, stmt string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to %s (is PostgreSQL running? set DATABASE_URL): %w", config.RedactURL(adminURL), err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	return err
}

// URL returns adminURL with its database replaced by name.
func URL(adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("DATABASE_URL %q is not a postgres:// URL", config.RedactURL(adminURL))
	}
	u.Path = "/" + name
	return u.String(), nil
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
