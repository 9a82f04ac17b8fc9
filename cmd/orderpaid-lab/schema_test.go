package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// The api and the worker refuse to start on a database whose schema is not
// the one they were built with: on an empty database they used to start,
// say they were running and ready, answer 500 to every request, and the
// worker created the broker's tables there. Each refusal names the version
// found, the version needed and what to run, and writes nothing.
func TestServingRefusesAnotherSchemaVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// change turns a database at version want into the case's;
		// says is what the refusal must say.
		change func(want int64) string
		says   func(want int64) []string
	}{
		{
			"an empty database",
			func(int64) string { return `DROP SCHEMA public CASCADE; CREATE SCHEMA public` },
			func(want int64) []string {
				return []string{"no schema (version 0)", fmt.Sprintf("needs version %d", want), "run `orderpaid migrate`"}
			},
		},
		{
			"an older schema",
			func(want int64) string {
				return fmt.Sprintf(`DELETE FROM goose_db_version WHERE version_id = %d`, want)
			},
			func(want int64) []string {
				return []string{fmt.Sprintf("schema version %d and this binary needs version %d", want-1, want), "run `orderpaid migrate`"}
			},
		},
		{
			"a newer schema",
			func(want int64) string {
				return fmt.Sprintf(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (%d, true)`, want+1)
			},
			func(want int64) []string {
				return []string{fmt.Sprintf("schema version %d, newer than version %d this binary needs", want+1, want)}
			},
		},
	}
	for _, process := range []string{"api", "worker"} {
		for _, c := range cases {
			t.Run(process+" on "+c.name, func(t *testing.T) {
				t.Parallel()
				pool, dbURL := pgtest.NewDatabase(t)
				want := schemaVersionOf(t, pool)
				if _, err := pool.Exec(t.Context(), c.change(want)); err != nil {
					t.Fatal(err)
				}
				before := tablesOf(t, pool)
				err := serveBriefly(t, process, dbURL)
				for _, part := range c.says(want) {
					if !strings.Contains(errString(err), part) {
						t.Errorf("%s on %s: err = %v, want one saying %q", process, c.name, err, part)
					}
				}
				if after := tablesOf(t, pool); strings.Join(after, " ") != strings.Join(before, " ") {
					t.Errorf("%s on %s: tables %v before, %v after, want nothing written", process, c.name, before, after)
				}
			})
		}
	}
}

// serveBriefly runs `orderpaid <process>` on the postgres broker against
// dbURL; a process that starts is stopped after 10s (and returns nil).
func serveBriefly(t *testing.T, process, dbURL string) error {
	t.Helper()
	getenv := devGetenv(map[string]string{"DATABASE_URL": dbURL, "BROKER": "postgres", "HTTP_ADDR": "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	return run(ctx, []string{"orderpaid", process}, getenv, &out, &out)
}

// schemaVersionOf is the version `orderpaid migrate` left in pool's database.
func schemaVersionOf(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var v int64
	if err := pool.QueryRow(t.Context(), `SELECT max(version_id) FROM goose_db_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// tablesOf lists the tables of pool's database outside the system schemas.
func tablesOf(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	var tables []string
	rows, err := pool.Query(t.Context(), `SELECT schemaname || '.' || tablename FROM pg_tables
		WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return tables
}
