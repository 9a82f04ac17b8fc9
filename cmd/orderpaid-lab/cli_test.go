package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// Every subcommand has -h, and every command-line mistake is a usageError
// (exit 2) whose message names the problem.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable"}[k]
	}
	for name := range commands() {
		var out strings.Builder
		err := run(context.Background(), []string{"orderpaid", name, "-h"}, getenv, &out, &out)
		if err != nil || !strings.Contains(out.String(), "usage: orderpaid-lab "+name) {
			t.Errorf("%s -h: err=%v output=%q, want usage and no error", name, err, out.String())
		}
	}
	tests := []struct {
		args []string
		want string // in the error message
	}{
		{[]string{"orderpaid"}, "no subcommand"},
		{[]string{"orderpaid", "launch"}, `unknown subcommand "launch"`},
		{[]string{"orderpaid", "api", "--port", "1"}, "flag provided but not defined: -port"},
		{[]string{"orderpaid", "worker", "--without", "seatbelt"}, `unknown guard "seatbelt"`},
		{[]string{"orderpaid", "worker", "--faults", "x"}, "want name=mode"},
		{[]string{"orderpaid", "backfill"}, "--from is required"},
		{[]string{"orderpaid", "backfill", "--from", "yesterday"}, "not an RFC 3339 time"},
		{[]string{"orderpaid", "backfill", "--from", "2026-11-02T00:00:00Z", "--to", "2026-11-01T00:00:00Z"}, "must be after"},
		{[]string{"orderpaid", "backfill", "--from", "2026-11-01T00:00:00Z", "--batch", "0"}, "--batch"},
		{[]string{"orderpaid", "migrate", "extra"}, `unexpected argument "extra"`},
		{[]string{"orderpaid", "crashmatrix", "--relay", "wal"}, `--relay "wal": want poll or logical`},
		{[]string{"orderpaid", "crashmatrix", "--flow", "refund,refunds"}, `--flow "refunds": want all or one or more of payment,`},
		{[]string{"orderpaid", "crashmatrix", "--webhook-never", "--late-webhook"}, "no webhook to be late"},
		{[]string{"orderpaid", "crashmatrix", "--only", "worker/order_paid/OrderMarkPaid#1:lost"}, "a COMMIT's also BOUNDARY:lost"},
		{[]string{"orderpaid", "crashmatrix", "--lost-answers", "--depth", "2"}, "no restart to crash again in"},
	}
	for _, tt := range tests {
		var out strings.Builder
		err := run(context.Background(), tt.args, getenv, &out, &out)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want a usage error containing %q", tt.args[1:], err, tt.want)
		}
	}
	err := run(context.Background(), []string{"orderpaid", "api"}, func(k string) string {
		return map[string]string{"BROKER": "sqs"}[k]
	}, &strings.Builder{}, &strings.Builder{})
	if !strings.Contains(errString(err), "BROKER") {
		t.Errorf("BROKER=sqs: err = %v, want one naming BROKER", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A pool too small for the worker's lanes would deadlock under load (every
// connection held by a lane waiting for a handler that waits for a
// connection): the worker refuses to start and says what to set.
func TestWorkerRefusesAPoolSmallerThanItsLanes(t *testing.T) {
	t.Parallel()
	_, dbURL := pgtest.NewDatabase(t)
	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": dbURL + "&pool_max_conns=4", "BROKER": "postgres", "HTTP_ADDR": "127.0.0.1:0"}[k]
	}
	// Without the check the worker would start and run: stop it after 10s.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	err := run(ctx, []string{"orderpaid", "worker"}, getenv, &out, &out)
	if !strings.Contains(errString(err), "set pool_max_conns to at least 8") {
		t.Fatalf("worker with pool_max_conns=4: err = %v, want one asking for at least 8", err)
	}
}

// A command run against a database without the schema says to run migrate,
// instead of only PostgreSQL's "relation ... does not exist".
func TestCommandOnAnEmptyDatabaseSaysToMigrate(t *testing.T) {
	t.Parallel()
	pool, dbURL := pgtest.NewDatabase(t)
	if _, err := pool.Exec(t.Context(), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return map[string]string{"DATABASE_URL": dbURL}[k] }
	var out strings.Builder
	err := run(t.Context(), []string{"orderpaid", "retention", "--once"}, getenv, &out, &out)
	if !strings.Contains(errString(err), "does not exist") || !strings.Contains(errString(err), "run `orderpaid migrate`") {
		t.Fatalf("retention on an empty database: err = %v, want PostgreSQL's error and the hint to migrate", err)
	}
}
