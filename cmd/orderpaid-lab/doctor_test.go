package main

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
)

// doctor runs `orderpaid doctor` with env and returns its report and error.
func doctor(t *testing.T, env map[string]string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := run(context.Background(), []string{"orderpaid", "doctor", "--timeout", "3s"}, func(k string) string { return env[k] }, &out, &out)
	return out.String(), err
}

// freePorts returns HTTP_ADDR and FAKES_ADDR on ports nothing listens on,
// below the ephemeral range.
func freePorts(t *testing.T) map[string]string {
	t.Helper()
	api, err := childproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	fakes, err := childproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"HTTP_ADDR": api, "FAKES_ADDR": fakes}
}

// line returns the report's line of check name.
func line(report, name string) string {
	for _, l := range strings.Split(report, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == name {
			return l
		}
	}
	return ""
}

// TestDoctorPasses runs the doctor against the real services, on each
// broker: every check passes and it exits 0.
func TestDoctorPasses(t *testing.T) {
	t.Parallel()
	pgtest.NewDatabase(t) // skips without PostgreSQL
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			env := merge(brokerEnv(t, b.name), freePorts(t), map[string]string{"DATABASE_URL": pgtest.AdminURL()})
			report, err := doctor(t, env)
			if err != nil || strings.Contains(report, "FAIL") {
				t.Fatalf("doctor: %v\n%s", err, report)
			}
			for _, name := range []string{"Go", "PostgreSQL", "database", "CREATEDB", "broker", "slots", "HTTP_ADDR", "FAKES_ADDR"} {
				if !strings.HasPrefix(line(report, name), "ok") {
					t.Errorf("no ok line for %s:\n%s", name, report)
				}
			}
			if !strings.Contains(line(report, "broker"), b.name) {
				t.Errorf("the broker line does not name %s: %q", b.name, line(report, "broker"))
			}
		})
	}
}

// TestDoctorFails breaks one thing at a time: each run exits 1 (a plain
// error, not a usage error), and the failing line names the fix.
func TestDoctorFails(t *testing.T) {
	t.Parallel()
	pgtest.NewDatabase(t)
	takenAddr, err := childproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", takenAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() }) // after the parallel subtests
	// An api left running from the last exercise: GET /healthz answers 200.
	apiAddr, err := childproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	apiLn, err := net.Listen("tcp", apiAddr)
	if err != nil {
		t.Fatal(err)
	}
	leftRunning := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	leftRunning.Listener = apiLn
	leftRunning.Start()
	t.Cleanup(leftRunning.Close)
	closed, err := childproc.FreeAddr() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	missingDB, err := tempdb.URL(pgtest.AdminURL(), "orderpaid_doctor_no_such_db")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		env   map[string]string
		check string
		want  []string // in the check's line
	}{
		{"PostgreSQL down", map[string]string{"DATABASE_URL": "postgres://postgres@" + closed + "/postgres?sslmode=disable"},
			"PostgreSQL", []string{"cannot reach PostgreSQL", "pg_ctlcluster", "DATABASE_URL"}},
		{"no such database", map[string]string{"DATABASE_URL": missingDB},
			"database", []string{"does not exist", "createdb", "orderpaid_doctor_no_such_db", "orderpaid migrate"}},
		{"HTTP_ADDR taken", map[string]string{"HTTP_ADDR": taken.Addr().String()},
			"HTTP_ADDR", []string{"is taken by another program", "ss -ltnp", "set HTTP_ADDR="}},
		{"an api left running", map[string]string{"HTTP_ADDR": apiAddr},
			"HTTP_ADDR", []string{"is taken by an orderpaid api (left running?", "set HTTP_ADDR="}},
		{"FAKES_ADDR not on this machine", map[string]string{"FAKES_ADDR": "192.0.2.1:20000"},
			"FAKES_ADDR", []string{"cannot listen", "set FAKES_ADDR"}},
		{"RabbitMQ down", map[string]string{"BROKER": "amqp", "AMQP_URL": "amqp://guest:guest@" + closed + "/"},
			"broker", []string{"cannot reach RabbitMQ", "rabbitmq-server", "AMQP_URL"}},
		{"NATS down", map[string]string{"BROKER": "nats", "NATS_URL": "nats://" + closed},
			"broker", []string{"cannot reach NATS", "nats-server -js", "NATS_URL"}},
		{"Kafka down", map[string]string{"BROKER": "kafka", "KAFKA_BROKERS": closed},
			"broker", []string{"cannot reach Kafka", closed, "KAFKA_BROKERS"}},
		{"bad variable", map[string]string{"BROKER": "sqs"},
			"configuration", []string{"BROKER", "postgres, amqp, nats or kafka"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := merge(freePorts(t), map[string]string{"DATABASE_URL": pgtest.AdminURL()}, tt.env)
			report, err := doctor(t, env)
			var ue usageError
			if err == nil || errors.As(err, &ue) {
				t.Fatalf("doctor: err = %v, want a failure (exit 1)\n%s", err, report)
			}
			l := line(report, tt.check)
			if !strings.HasPrefix(l, "FAIL") {
				t.Fatalf("check %s did not fail:\n%s", tt.check, report)
			}
			for _, w := range tt.want {
				if !strings.Contains(l, w) {
					t.Errorf("the %s line lacks %q: %s", tt.check, w, l)
				}
			}
		})
	}
}

// TestDoctorFailsOnASlotWithoutReader: a replication slot of the database
// that nobody reads keeps WAL until the server's disk fills, whatever
// OUTBOX_RELAY says, so the doctor fails on it and names the command that
// drops it. With OUTBOX_RELAY=logical the outbox's own slot is the
// OUTBOX_RELAY line's: its reader is a worker that may just not run now.
func TestDoctorFailsOnASlotWithoutReader(t *testing.T) {
	t.Parallel()
	pool, dbURL, slot := databaseWithSlot(t)
	env := merge(freePorts(t), map[string]string{"DATABASE_URL": dbURL})
	failsOn := func(env map[string]string, slot string) {
		t.Helper()
		report, err := doctor(t, env)
		l := line(report, "slots")
		if err == nil || !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, slot) || !strings.Contains(l, "pg_drop_replication_slot('"+slot+"')") {
			t.Errorf("OUTBOX_RELAY=%s: doctor: %v, slots line %q: want a failure naming %s and the command that drops it\n%s", cmp.Or(env["OUTBOX_RELAY"], "poll"), err, l, slot, report)
		}
	}
	failsOn(env, slot) // OUTBOX_RELAY=poll, the default: nothing reads it

	logical := merge(env, map[string]string{"OUTBOX_RELAY": "logical"})
	// The slot has kept every WAL segment the server wrote since it was
	// made: on a server shared with other tests (each CREATE DATABASE writes
	// its copy to the WAL) that passes the doctor's one segment within
	// seconds. Moved to now, it keeps only what is written during the check.
	if _, err := pool.Exec(t.Context(), `SELECT pg_replication_slot_advance($1, pg_current_wal_lsn())`, slot); err != nil {
		t.Fatal(err)
	}
	report, err := doctor(t, logical)
	relay := line(report, "OUTBOX_RELAY")
	// Still, a busy server may write a segment during the check itself: then
	// the OUTBOX_RELAY line fails on the WAL the slot keeps, rightly.
	busy := strings.HasPrefix(relay, "FAIL") && strings.Contains(relay, "has no reader and keeps")
	if !strings.HasPrefix(line(report, "slots"), "ok") || !(strings.HasPrefix(relay, "ok") && err == nil || busy) {
		t.Errorf("OUTBOX_RELAY=logical, its slot made and not read now: doctor: %v, want the slots line ok and the OUTBOX_RELAY line ok "+
			"(or failing on the WAL a busy server wrote meanwhile)\n%s", err, report)
	}
	other := "orderpaid_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := pool.Exec(t.Context(), `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, other); err != nil {
		t.Fatal(err)
	}
	failsOn(logical, other)
}

// TestDoctorNATSWithoutJetStream starts a private nats-server without -js:
// the doctor says to restart it with -js.
func TestDoctorNATSWithoutJetStream(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		bin = "/usr/sbin/nats-server"
		if _, err := os.Stat(bin); err != nil {
			t.Skip("nats-server not installed")
		}
	}
	addr, err := childproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "-a", host, "-p", port)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	eventually(t, 10*time.Second, "private nats-server up", func() (bool, string) { return dialable(addr), "not listening" })
	report, _ := doctor(t, merge(freePorts(t), map[string]string{"BROKER": "nats", "NATS_URL": "nats://" + addr,
		"DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable"}))
	if l := line(report, "broker"); !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, "without JetStream") || !strings.Contains(l, "-js") {
		t.Errorf("broker line = %q, want a failure saying to restart nats-server with -js\n%s", l, report)
	}
}
