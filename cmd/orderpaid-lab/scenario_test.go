package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
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
		{"scenario", "run", "all", "--broker", "sqs"},
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
	err := run(context.Background(), []string{"orderpaid", "scenario", "run", "two-events", "--without", "ledger-key", "--audit", "--bin", binary(t)},
		getenv, &out, &progress)
	if err != nil {
		t.Fatalf("scenario run: %v\n%s\n%s", err, out.String(), progress.String())
	}
	for _, want := range []string{"two-events", "ledger-key", "damage shown", "1 of 1 scenario runs showed what they expected",
		"GET /orders/{id}/audit, two-events --without ledger-key:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// --audit: the order's audit as the API answers it, on one line after
	// the table; with the ledger key off, the commission twice.
	var audit struct {
		Executions map[string]int64 `json:"executions"`
		Effects    map[string]int64 `json:"effects"`
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, `{"order_id":`) {
			if err := json.Unmarshal([]byte(line), &audit); err != nil {
				t.Fatalf("audit line %q: %v", line, err)
			}
		}
	}
	if audit.Executions["order_paid"] != 2 || audit.Effects["commission"] != 2 || audit.Effects["paid"] != 1 {
		t.Errorf("--audit printed executions %v, effects %v; want order_paid 2, commission 2, paid 1:\n%s", audit.Executions, audit.Effects, out.String())
	}
}

// TestScenarioNotApplicableOnBroker: a scenario whose fault needs another
// broker is reported as not applicable, with the reason, and exits 0.
func TestScenarioNotApplicableOnBroker(t *testing.T) {
	t.Parallel()
	for _, b := range []string{"amqp", "nats"} {
		var out, progress bytes.Buffer
		err := run(context.Background(), []string{"orderpaid", "scenario", "run", "two-workers", "--broker", b}, func(string) string { return "" }, &out, &progress)
		if err != nil {
			t.Errorf("scenario run two-workers --broker %s: %v, want exit 0\n%s", b, err, out.String())
		}
		for _, want := range []string{"not applicable: runs on the postgres broker only", "AckWait"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("--broker %s: output lacks %q:\n%s", b, want, out.String())
			}
		}
	}
}

// TestScenarioBrokerPrefix runs a scenario on RabbitMQ and on NATS with a
// BROKER_PREFIX of the runner's: with --keep its queues and streams are left
// under that prefix; without, none is left.
func TestScenarioBrokerPrefix(t *testing.T) {
	t.Parallel()
	_, dbURL := pgtest.NewDatabase(t) // skips without PostgreSQL
	for _, b := range []string{"amqp", "nats"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			env := merge(brokerEnv(t, b), map[string]string{"DATABASE_URL": dbURL})
			prefix := env["BROKER_PREFIX"]
			for _, keep := range []bool{true, false} {
				args := []string{"orderpaid", "scenario", "run", "two-events", "--broker", b, "--bin", binary(t)}
				if keep {
					args = append(args, "--keep")
				}
				var out, progress bytes.Buffer
				if err := run(context.Background(), args, func(k string) string { return env[k] }, &out, &progress); err != nil {
					t.Fatalf("scenario run (keep %v): %v\n%s\n%s", keep, err, out.String(), progress.String())
				}
				left := brokerObjects(t, b, env, prefix)
				if keep && len(left) == 0 {
					t.Errorf("--keep: nothing on %s under the runner's BROKER_PREFIX %s: the prefix was not used", b, prefix)
				}
				if !keep && len(left) > 0 {
					t.Errorf("without --keep, left on %s: %v", b, left)
				}
				if keep {
					removeBrokerObjects(t, b, env, left)
					dropKept(t, progress.String())
				}
			}
		})
	}
}

// brokerObjects lists the queues and exchanges (RabbitMQ, read with
// rabbitmqctl: AMQP cannot list them) or streams (NATS) whose names begin
// with prefix.
func brokerObjects(t *testing.T, b string, env map[string]string, prefix string) []string {
	t.Helper()
	var found []string
	switch b {
	case "nats":
		nc, err := nats.Connect(env["NATS_URL"])
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := nc.JetStream()
		if err != nil {
			t.Fatal(err)
		}
		for name := range js.StreamNames() {
			if strings.HasPrefix(name, prefix) {
				found = append(found, "stream "+name)
			}
		}
	case "amqp":
		if _, err := exec.LookPath("rabbitmqctl"); err != nil {
			t.Skip("rabbitmqctl not installed: cannot list RabbitMQ's queues")
		}
		for _, kind := range []string{"queue", "exchange"} {
			out, err := exec.Command("rabbitmqctl", "-q", "list_"+kind+"s", "name").CombinedOutput()
			if err != nil {
				t.Fatalf("rabbitmqctl list_%ss: %v\n%s", kind, err, out)
			}
			for _, name := range strings.Fields(string(out)) {
				if strings.HasPrefix(name, prefix) {
					found = append(found, kind+" "+name)
				}
			}
		}
	}
	return found
}

// removeBrokerObjects deletes what brokerObjects found.
func removeBrokerObjects(t *testing.T, b string, env map[string]string, objects []string) {
	t.Helper()
	for _, o := range objects {
		kind, name, _ := strings.Cut(o, " ")
		var err error
		switch {
		case b == "nats":
			var nc *nats.Conn
			if nc, err = nats.Connect(env["NATS_URL"]); err == nil {
				var js nats.JetStreamContext
				if js, err = nc.JetStream(); err == nil {
					err = js.DeleteStream(name)
				}
				nc.Close()
			}
		case kind == "queue":
			var out []byte
			if out, err = exec.Command("rabbitmqctl", "-q", "delete_queue", name).CombinedOutput(); err != nil {
				err = fmt.Errorf("%w: %s", err, out)
			}
		default:
			var conn *amqp091.Connection
			if conn, err = amqp091.Dial(env["AMQP_URL"]); err == nil {
				var ch *amqp091.Channel
				if ch, err = conn.Channel(); err == nil {
					err = ch.ExchangeDelete(name, false, false)
				}
				conn.Close()
			}
		}
		if err != nil {
			t.Logf("remove %s: %v", o, err)
		}
	}
}

// dropKept drops the database and removes the logs of the runs the
// progress lines say were kept.
func dropKept(t *testing.T, progress string) {
	t.Helper()
	for _, m := range keptRe.FindAllStringSubmatch(progress, -1) {
		dir := m[1]
		log, _ := os.ReadFile(filepath.Join(dir, "scenario.log"))
		if db := keptDBRe.FindSubmatch(log); db != nil {
			if err := tempdb.Drop(pgtest.AdminURL(), string(db[1])); err != nil {
				t.Log(err)
			}
		}
		_ = os.RemoveAll(dir)
	}
}

var (
	keptRe   = regexp.MustCompile(`logs and database kept: (\S+)`)
	keptDBRe = regexp.MustCompile(`database (orderpaid_scn_\w+)`)
)
