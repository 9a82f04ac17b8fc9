package soak_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/kafkalab"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/soak"
)

// requireNATSServer skips the test when nats-server is not installed, or
// fails it in CI, where it must be.
func requireNATSServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("nats-server"); err == nil {
		return
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("nats-server is required in CI")
	}
	t.Skip("nats-server is not installed (the soak restarts a private one)")
}

// The CI-sized soak: 300 orders, 30% duplicate webhooks, worker processes
// SIGKILLed and restarted gracefully, the (private) NATS server restarted;
// with ORDERPAID_DISRUPTIVE=1 (scripts/test.sh runs it alone) PostgreSQL is
// restarted too. Every invariant must hold at the end.
func TestSoakUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills real processes")
	}
	requireNATSServer(t)
	pgtest.NewDatabase(t) // skips (or fails in CI) when PostgreSQL is down
	disruptive := os.Getenv("ORDERPAID_DISRUPTIVE") == "1"
	if !disruptive {
		t.Parallel()
	}
	bin, err := childproc.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := soak.Run(t.Context(), soak.Config{
		Binary: bin, AdminURL: pgtest.AdminURL(), Broker: "nats", LogDir: t.TempDir(),
		Orders: 300, Rate: 40, Workers: 2, KillEvery: 1500 * time.Millisecond, RestartEvery: 4 * time.Second,
		RestartPostgres: disruptive, SettleTimeout: 2 * time.Minute, KeepOnFailure: true, Progress: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	requirePassed(t, rep)
	kinds := faultKinds(t, rep.Faults)
	if kinds["SIGKILL"] < 2 || kinds["SIGTERM"] < 1 || kinds["nats-server"] != 1 || (disruptive && kinds["PostgreSQL"] != 1) {
		t.Errorf("faults injected %v: want at least 2 SIGKILLs, a graceful restart, one nats-server restart (and one PostgreSQL restart when disruptive)", kinds)
	}
}

// The soak on Kafka, the in-process cluster: worker processes SIGKILLed
// mid-flow (their records not committed, their members left to expire) and
// restarted gracefully while orders flow, and every invariant holds. Each
// kill waits until the consumer groups are stable (kafkalab.WaitGroupsStable),
// so the test also proves that wait ends: a kill it gave up on is a fault
// with an error.
func TestSoakUnderFaultsOnKafka(t *testing.T) {
	bin := parallelSoak(t)
	rep, err := soak.Run(t.Context(), soak.Config{
		Binary: bin, AdminURL: pgtest.AdminURL(), Broker: "kafka", LogDir: t.TempDir(),
		Orders: 200, Rate: 15, Workers: 2, KillEvery: 1500 * time.Millisecond, RestartEvery: 5 * time.Second,
		SettleTimeout: time.Minute, KeepOnFailure: true, Progress: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	requirePassed(t, rep)
	kinds := faultKinds(t, rep.Faults)
	if kinds["SIGKILL"] < 2 || kinds["SIGTERM"] < 1 {
		t.Errorf("faults injected %v: want at least 2 SIGKILLs and a graceful restart", kinds)
	}
}

// The soak of issue 36 on Kafka: 12 worker SIGKILLs or more in 45s, one
// every 3.5s, on a kfake cluster started here and passed as KAFKA_BROKERS,
// so that the soak does not wait for stable groups before a kill (as it
// does on the cluster it starts itself) and kills catch workers in their
// JoinGroup. Before the members started over with a new client
// (internal/platform/broker/kafkarejoin.go) and the cluster removed its
// ghosts (internal/lab/kafkalab/ghosts.go), order_confirmed's group stayed
// rebalancing for minutes and the flow did not settle. About three
// minutes: it runs only with ORDERPAID_SOAK_RAPID_KILLS=1.
func TestSoakOnKafkaUnderRapidKills(t *testing.T) {
	if os.Getenv("ORDERPAID_SOAK_RAPID_KILLS") != "1" {
		t.Skip("set ORDERPAID_SOAK_RAPID_KILLS=1 to run it (about three minutes)")
	}
	bin := parallelSoak(t)
	cluster, err := kafkalab.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	rep, err := soak.Run(t.Context(), soak.Config{
		Binary: bin, AdminURL: pgtest.AdminURL(), Broker: "kafka", KafkaBrokers: cluster.Brokers(), LogDir: t.TempDir(),
		Orders: 200, Rate: 6.5, Workers: 2, KillEvery: 3500 * time.Millisecond, RestartEvery: time.Hour,
		SettleTimeout: 3 * time.Minute, KeepOnFailure: true, Progress: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	requirePassed(t, rep)
	if kinds := faultKinds(t, rep.Faults); kinds["SIGKILL"] < 12 {
		t.Errorf("faults injected %v: want at least 12 SIGKILLs", kinds)
	}
	t.Logf("load %s, settled %s after it", rep.LoadTime.Round(time.Millisecond), rep.SettleTime.Round(time.Millisecond))
}

// The same soak with the outbox relayed from the WAL (OUTBOX_RELAY=logical),
// in batch mode: every worker SIGKILL kills a relay reading the slot, which
// its successor reads again from the last confirmed position. Skipped where
// wal_level is not logical (outside CI).
func TestSoakUnderFaultsWithTheLogicalRelay(t *testing.T) {
	bin := parallelSoak(t)
	pgtest.RequireLogicalWAL(t)
	rep, err := soak.Run(t.Context(), soak.Config{
		Binary: bin, AdminURL: pgtest.AdminURL(), Broker: "postgres", LogDir: t.TempDir(), OutboxRelay: "logical", BatchSize: 20,
		Orders: 200, Rate: 15, Workers: 2, KillEvery: 1500 * time.Millisecond, RestartEvery: 5 * time.Second,
		SettleTimeout: time.Minute, KeepOnFailure: true, Progress: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	requirePassed(t, rep)
	if kinds := faultKinds(t, rep.Faults); kinds["SIGKILL"] < 2 {
		t.Errorf("faults injected %v: want at least 2 SIGKILLs", kinds)
	}
}

// The soak is worth something only if it fails when a guard is missing:
// with the ledger key made from the delivery instead of the business
// intent, the second event of a payment credits a second commission, and
// the soak must say so.
func TestSoakCatchesADoubleCommission(t *testing.T) {
	bin := parallelSoak(t)
	rep, err := soak.Run(t.Context(), soak.Config{
		Binary: bin, AdminURL: pgtest.AdminURL(), Broker: "postgres", LogDir: t.TempDir(),
		Orders: 40, Rate: 200, Workers: 1, Without: "ledger-key",
		// With a guard off the checks never all pass, so the soak waits the
		// whole settle timeout; it runs beside TestSoakUnderFaults, which
		// takes longer, and 30s leaves room for a loaded machine (8s did not).
		KillEvery: time.Hour, RestartEvery: time.Hour, SettleTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	if rep.Passed() {
		t.Fatalf("the soak passed with the ledger key off:\n%s", out.String())
	}
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Name, "refunded orders:") {
			// A refunded order whose two payment events both came before
			// its refund has two commissions and one reversal: these fail
			// too, or not, as the shuffle ordered the events.
			continue
		}
		wantOK := c.Name != "one commission each" && c.Name != "sum of commissions exact"
		if c.OK != wantOK {
			t.Errorf("check %q: ok=%v, want %v (%s)", c.Name, c.OK, wantOK, c.Detail)
		}
	}
	if !strings.Contains(out.String(), "FAIL") {
		t.Errorf("report does not say FAIL:\n%s", out.String())
	}
}

// parallelSoak skips the test in -short mode and when PostgreSQL is down
// (fails it in CI), runs it in parallel, and builds the orderpaid binary
// the soak starts.
func parallelSoak(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts and kills real processes")
	}
	pgtest.NewDatabase(t)
	t.Parallel()
	bin, err := childproc.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// requirePassed logs the report and stops the test unless every invariant
// held.
func requirePassed(t *testing.T, rep interface {
	Print(io.Writer)
	Passed() bool
}) {
	t.Helper()
	var out bytes.Buffer
	rep.Print(&out)
	t.Logf("soak report:\n%s", out.String())
	if !rep.Passed() {
		t.Fatal("an invariant did not hold (report above)")
	}
}

// faultKinds counts the faults by their first word (SIGKILL, SIGTERM,
// nats-server, ...) and fails the test on each that was not injected
// cleanly.
func faultKinds(t *testing.T, faults []soak.Fault) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	for _, f := range faults {
		kinds[strings.Fields(f.What)[0]]++
		if f.Err != nil {
			t.Errorf("fault %q was not injected cleanly: %v", f.What, f.Err)
		}
	}
	return kinds
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
