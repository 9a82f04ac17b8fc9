// Package pgtest gives each test its own PostgreSQL database, created from a
// migrated template, so tests run in parallel against a real server and never
// see each other's rows.
package pgtest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/sql/migrations"
)

// AdminURL is the server tests create their databases on: TEST_DATABASE_URL,
// or the local server of the README.
func AdminURL() string {
	return cmp.Or(os.Getenv("TEST_DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
}

// Require skips t when the server of AdminURL cannot be reached, saying so;
// under CI (CI set) it fails instead.
func Require(t testing.TB) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), AdminURL())
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("PostgreSQL not reachable at %s: %v", AdminURL(), err)
	}
	conn.Close(context.Background())
}

// NewDatabase creates a fresh, migrated database for t and returns a pool on it
// and its URL. The database is dropped when the test ends, unless it failed:
// then its name is logged so it can be inspected with psql.
func NewDatabase(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("PostgreSQL not reachable at %s (start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start): %v", AdminURL(), err)
	}
	defer admin.Close(ctx)

	tpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		t.Fatalf("prepare template database: %v", err)
	}
	name := "orderpaid_test_" + tempdb.RandomHex(6)
	url, err := tempdb.CreateFrom(ctx, AdminURL(), name, tpl)
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	pool, err := postgres.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		if t.Failed() {
			t.Logf("kept database %s for inspection: psql %q", name, url)
			return
		}
		_ = tempdb.Drop(AdminURL(), name)
	})
	return pool, url
}

// ensureTemplate creates, once per schema version, a migrated database that
// test databases are copied from. An advisory lock serialises test binaries
// that start at the same time.
func ensureTemplate(ctx context.Context, admin *pgx.Conn) (string, error) {
	name := "orderpaid_tpl_" + schemaHash()
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(4242001)"); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(4242001)")

	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	url, err := tempdb.URL(AdminURL(), building)
	if err != nil {
		return "", err
	}
	pool, err := postgres.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	err = postgres.Migrate(ctx, pool, io.Discard)
	pool.Close()
	if err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return "", err
	}
	return name, nil
}

// schemaHash names the template after the migrations' content, so a changed
// schema gets a new template instead of a stale one.
func schemaHash() string {
	h := sha256.New()
	_ = fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(migrations.FS, path)
		fmt.Fprintf(h, "%s\n%s\n", path, b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}
