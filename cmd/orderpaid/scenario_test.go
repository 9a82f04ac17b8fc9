package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
)

func TestScenarioList(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"orderpaid", "scenario", "list"}, func(string) string { return "" }, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, s := range scenario.Catalogue() {
		if !strings.Contains(out.String(), s.Name) {
			t.Errorf("scenario list does not show %s:\n%s", s.Name, out.String())
		}
	}
}

func TestScenarioUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"scenario"},
		{"scenario", "frob"},
		{"scenario", "run"},
		{"scenario", "run", "no-such-scenario"},
		{"scenario", "run", "two-events", "--without", "bogus"},
		{"scenario", "run", "two-events", "--without", "outbox"}, // not what two-events demonstrates
		{"scenario", "run", "all", "--matrix", "--without", "inbox"},
		{"scenario", "run", "all", "--parallel", "0"},
		{"scenario", "run", "all", "--broker", "kafka"},
		{"retention", "--inbox-window", "1h"},
		{"reprocess", "--poison", "--window", "0s"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"orderpaid"}, args...), func(string) string { return "" }, &out, &out)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("orderpaid %s: err = %v, want a usage error (exit 2)", strings.Join(args, " "), err)
		}
	}
}

// TestScenarioRun runs one scenario through the command line, as a user
// does: real child processes, a database of its own, the table on stdout.
func TestScenarioRun(t *testing.T) {
	t.Parallel()
	_, dbURL := pgtest.NewDatabase(t) // skips without PostgreSQL
	var out, progress bytes.Buffer
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	err := run(context.Background(), []string{"orderpaid", "scenario", "run", "two-events", "--without", "ledger-key", "--bin", binary(t)},
		getenv, &out, &progress)
	if err != nil {
		t.Fatalf("scenario run: %v\n%s\n%s", err, out.String(), progress.String())
	}
	for _, want := range []string{"two-events", "ledger-key", "damage shown", "1 of 1 scenario runs showed what they expected"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
