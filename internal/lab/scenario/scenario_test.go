package scenario_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
)

// bin is the orderpaid binary the scenarios start, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "orderpaid-scenario-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if bin, err = childproc.Build(dir); err != nil {
		fmt.Fprintf(os.Stderr, "build orderpaid for the scenarios: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestScenarios runs every scenario with all guards on, then with each of its
// guards off, each in a world of its own (database, ports, processes), and
// checks the counts it observed: once each with the guards on, the damage
// with a guard off. A scenario whose guard is off and still shows no damage
// fails just as one that shows damage with every guard on.
func TestScenarios(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	cfg := scenario.Config{Bin: bin, AdminURL: pgtest.AdminURL(), Broker: "postgres"}
	for _, c := range scenario.Matrix(scenario.Catalogue()) {
		name := c.Scenario.Name
		if c.Without != "" {
			name += "/without_" + c.Without
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := scenario.RunOne(context.Background(), cfg, c)
			if r.Err != nil {
				t.Fatalf("did not run to the end: %v (logs: %s)", r.Err, r.LogDir)
			}
			if !r.OK() {
				t.Errorf("observed %+v\nnot as expected: %v (logs and database kept: %s)", r.Counts, r.Failed, r.LogDir)
			}
		})
	}
}

// TestScenariosInBatchMode runs every scenario protected with the worker in
// batch mode (CONSUMER_BATCH_SIZE=20: every topic read and applied in
// batches): each effect once, as one message at a time. The damages with a
// guard off are the per-message ones too (with a consumer guard off, batch
// mode runs each message through the per-message handler,
// internal/lab/switches.Batches); the whole matrix in batch mode is run by
// hand (docs/scenarios.md), as it would double TestScenarios' time.
func TestScenariosInBatchMode(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	cfg := scenario.Config{Bin: bin, AdminURL: pgtest.AdminURL(), Broker: "postgres",
		Env: map[string]string{"CONSUMER_BATCH_SIZE": "20"}}
	for _, s := range scenario.Catalogue() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			runCase(t, cfg, scenario.Case{Scenario: s}, t.Skip)
		})
	}
}

// TestScenariosInBatchModeWithAGuardOff runs one scenario for each guard of
// the consumers with that guard off, in batch mode: the worker then runs
// each message through the per-message handler (internal/lab/switches.Batches,
// wired as internal/app/worker.go wires it), which shows the damage the
// per-message path teaches, end to end. (The whole matrix in batch mode is
// run by hand.)
func TestScenariosInBatchModeWithAGuardOff(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	cfg := scenario.Config{Bin: bin, AdminURL: pgtest.AdminURL(), Broker: "postgres",
		Env: map[string]string{"CONSUMER_BATCH_SIZE": "20"}}
	byName := map[string]*scenario.Scenario{}
	for _, s := range scenario.Catalogue() {
		byName[s.Name] = s
	}
	for _, c := range []struct{ scenario, guard string }{
		{"two-events", "ledger-key"},
		{"commit-no-ack", "state-check"},
		{"partial-failure", "outbox"},
		{"stock-redelivered", "stock-reservation"},
		{"job-reenqueued", "inbox"},
		{"broker-redelivery", "notification-claim"},
	} {
		t.Run(c.scenario+"/without_"+c.guard, func(t *testing.T) {
			t.Parallel()
			s, ok := byName[c.scenario]
			if !ok {
				t.Fatalf("no scenario %s", c.scenario)
			}
			runCase(t, cfg, scenario.Case{Scenario: s, Without: c.guard}, t.Fatal)
		})
	}
}

// TestScenariosWithThePositionInTheEffectsTransaction runs, with the batch
// reader's position committed with the effects (CONSUMER_POSITION=
// with-effects), the scenarios whose counts differ in that mode (their
// WithEffects) and those that cut a worker short between its effects and
// its acknowledgement: each effect once in every one, and where the
// repeat came from that gap, one execution instead of two; and, with each
// guard whose outcome differs in this mode off, that outcome.
func TestScenariosWithThePositionInTheEffectsTransaction(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	cfg := scenario.Config{Bin: bin, AdminURL: pgtest.AdminURL(), Broker: "postgres",
		Env: map[string]string{"CONSUMER_BATCH_SIZE": "20", "CONSUMER_POSITION": "with-effects"}}
	cut := []string{"partial-failure", "transient-retry", "commit-no-ack", "worker-restart", "graceful-restart",
		"short-order-refunded", "broker-redelivery"}
	ran := 0
	for _, s := range scenario.Catalogue() {
		if s.WithEffects == nil && !slices.Contains(cut, s.Name) {
			continue
		}
		if s.Broker != "" && s.Broker != "postgres" {
			continue // another broker's scenario: TestScenariosOnKafka runs Kafka's in this mode
		}
		ran++
		cases := []scenario.Case{{Scenario: s}}
		if s.WithEffects != nil {
			// And each guard whose outcome differs in this mode, off.
			for guard := range s.WithEffects.Without {
				cases = append(cases, scenario.Case{Scenario: s, Without: guard})
			}
		}
		for _, c := range cases {
			name := c.Scenario.Name
			if c.Without != "" {
				name += "/without_" + c.Without
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runCase(t, cfg, c, t.Fatal)
			})
		}
	}
	if ran < len(cut)+2 {
		t.Errorf("ran %d scenarios, want the %d cut ones and at least 2 that differ", ran, len(cut))
	}
}

// runCase runs c and fails t unless it showed what it expects; a case not
// applicable goes to notApplicable (t.Skip or t.Fatal) with its reason.
func runCase(t *testing.T, cfg scenario.Config, c scenario.Case, notApplicable func(args ...any)) {
	t.Helper()
	r := scenario.RunOne(context.Background(), cfg, c)
	if r.NotApplicable != "" {
		notApplicable("not applicable: " + r.NotApplicable)
	}
	if r.Err != nil {
		t.Fatalf("did not run to the end: %v (logs: %s)", r.Err, r.LogDir)
	}
	if !r.OK() {
		t.Errorf("observed %+v\nnot as expected: %v (logs and database kept: %s)", r.Counts, r.Failed, r.LogDir)
	}
}

func requirePostgres(t *testing.T) { t.Helper(); pgtest.Require(t) }
