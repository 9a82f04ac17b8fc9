package scenario

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The statements in this file are administration of the server (create and
// drop a database, set a per-database parameter): sqlc generates queries
// against the schema, not DDL with a database name in it, so they are the
// only SQL written in Go here. Everything the scenarios read goes through
// internal/platform/queries.

// createDatabase creates an empty database for one scenario on the server of
// adminURL and returns its name and URL. The schema is applied by running
// `orderpaid migrate`, as an operator would.
func createDatabase(ctx context.Context, adminURL, scenario string) (name, dbURL string, err error) {
	name = "orderpaid_scn_" + strings.ReplaceAll(scenario, "-", "_") + "_" + randomHex(3)
	if err := admin(ctx, adminURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", "", fmt.Errorf("create database %s (does the DATABASE_URL role have CREATEDB?): %w", name, err)
	}
	dbURL, err = withDatabase(adminURL, name)
	if err != nil {
		return "", "", err
	}
	return name, dbURL, nil
}

// setDatabaseParameter sets a server parameter for every new session on the
// database, such as idle_in_transaction_session_timeout.
func setDatabaseParameter(ctx context.Context, adminURL, name, param, value string) error {
	stmt := fmt.Sprintf("ALTER DATABASE %s SET %s = %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{param}.Sanitize(), quoteLiteral(value))
	if err := admin(ctx, adminURL, stmt); err != nil {
		return fmt.Errorf("set %s on database %s: %w", param, name, err)
	}
	return nil
}

// dropDatabase drops a scenario's database, disconnecting whatever is left.
func dropDatabase(adminURL, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin(ctx, adminURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s (drop it by hand with psql): %w", name, err)
	}
	return nil
}

func admin(ctx context.Context, adminURL, stmt string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to %s (is PostgreSQL running? set DATABASE_URL): %w", redact(adminURL), err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	return err
}

// withDatabase returns adminURL with its database replaced by name.
func withDatabase(adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("DATABASE_URL %q is not a postgres:// URL", redact(adminURL))
	}
	u.Path = "/" + name
	return u.String(), nil
}

// redact hides a password in a URL shown in an error.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
