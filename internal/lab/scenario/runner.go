package scenario

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Config is how the runner starts the world of each scenario.
type Config struct {
	// Bin is the orderpaid binary started as child processes.
	Bin string
	// AdminURL is a PostgreSQL URL on whose server each scenario creates,
	// then drops, its own database (the runner's DATABASE_URL).
	AdminURL string
	// Broker is postgres (default), amqp, nats or kafka. On the last three
	// every scenario gets a BROKER_PREFIX of its own, BrokerPrefix followed
	// by "scn<random>_", so scenarios never consume each other's messages,
	// nor those of anyone else sharing the broker; its queues, exchanges,
	// streams, topics and groups are deleted when it ends (broker_cleanup.go).
	Broker string
	// BrokerPrefix is the runner's own BROKER_PREFIX (at most 28
	// characters: the runner adds 12); default none.
	BrokerPrefix string
	// Env is passed on to every child (AMQP_URL, NATS_URL, WEBHOOK_SECRET,
	// OTEL_*); nothing else is inherited.
	Env map[string]string
	// Keep keeps each scenario's database, logs and broker queues and
	// streams instead of removing them (the database and logs are always
	// kept when a scenario fails; the broker's objects are not).
	Keep bool
	// LogDir is where each scenario's log directory is made (default: the
	// system's temporary directory).
	LogDir string
	// Parallel is how many scenarios run at once (default 1).
	Parallel int
	// Quiet is how long no count may change before a scenario counts as
	// settled (default 1.5s); SettleTimeout bounds the wait (default 60s).
	Quiet, SettleTimeout time.Duration
	// Progress receives a line when each scenario starts and ends; nil
	// discards them.
	Progress io.Writer
	// Audits keeps, once a scenario has settled, the answer of GET
	// /orders/{id}/audit for each of its orders (Result.Audits), before
	// its world is torn down.
	Audits bool
}

func (c Config) withDefaults() Config {
	c.Broker = cmp.Or(c.Broker, "postgres")
	c.Parallel = max(c.Parallel, 1)
	c.Quiet = cmp.Or(c.Quiet, 1500*time.Millisecond)
	c.SettleTimeout = cmp.Or(c.SettleTimeout, 60*time.Second)
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// Result is one row of the table: what a scenario observed and whether that
// is what it expected.
type Result struct {
	Scenario string
	Without  string
	Repeated string
	Counts   Counts
	Expect   Expect
	// Failed lists the checks that did not hold; Err is set when the
	// scenario could not run to the end.
	Failed []string
	Err    error
	// NotApplicable says why the scenario did not run on this broker (its
	// fault cannot happen there); such a run is not a failure.
	NotApplicable string
	Elapsed       time.Duration
	// LogDir holds the processes' logs when they were kept.
	LogDir string
	// Audits are the API's answers to GET /orders/{id}/audit, one JSON
	// line per order in the order the scenario tracked them, read after
	// it settled (Config.Audits).
	Audits []string
}

// OK reports whether the scenario ran and showed what it expected.
func (r Result) OK() bool { return r.Err == nil && len(r.Failed) == 0 }

// Verdict is the last column of the table.
func (r Result) Verdict() string {
	switch {
	case r.NotApplicable != "":
		return "not applicable: " + r.NotApplicable
	case r.Err != nil:
		return "ERROR: " + firstLine(r.Err.Error())
	case len(r.Failed) > 0:
		return "UNEXPECTED: " + strings.Join(r.Failed, ", ")
	case r.Expect.Damage != "":
		return "ok, damage shown: " + r.Expect.Damage
	case r.Expect.Note != "":
		return "ok, " + r.Expect.Note
	default:
		return "ok, each effect once"
	}
}

// Run runs cases, cfg.Parallel at a time, and returns their results in the
// order of cases.
func Run(ctx context.Context, cfg Config, cases []Case) []Result {
	cfg = cfg.withDefaults()
	results := make([]Result, len(cases))
	sem := make(chan struct{}, cfg.Parallel)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range cases {
		sem <- struct{}{} // in order: the progress lines follow the table
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			mu.Lock()
			fmt.Fprintf(cfg.Progress, "[%d/%d] %s: running\n", i+1, len(cases), label(c))
			mu.Unlock()
			r := RunOne(ctx, cfg, c)
			mu.Lock()
			fmt.Fprintf(cfg.Progress, "[%d/%d] %s: %s (%.1fs)%s\n", i+1, len(cases), label(c), r.Verdict(), r.Elapsed.Seconds(), logHint(r))
			mu.Unlock()
			results[i] = r
		}()
	}
	wg.Wait()
	return results
}

// RunOne runs one case in a world of its own and checks its expectation.
func RunOne(ctx context.Context, cfg Config, c Case) (r Result) {
	cfg = cfg.withDefaults()
	start := time.Now()
	r = Result{Scenario: c.Scenario.Name, Without: c.Without, Repeated: c.Scenario.Repeated}
	defer func() { r.Elapsed = time.Since(start) }()
	c.Scenario = c.Scenario.inMode(cfg.Env)
	var err error
	if r.Expect, err = c.Scenario.Expectation(c.Without); err != nil {
		r.Err = err
		return r
	}
	if c.Scenario.Broker != "" && c.Scenario.Broker != cfg.Broker {
		reason := cmp.Or(c.Scenario.BrokerReason, "its fault needs that broker")
		r.NotApplicable = fmt.Sprintf("runs on the %s broker only (run it with --broker %s): %s", c.Scenario.Broker, c.Scenario.Broker, reason)
		return r
	}
	if why, ok := c.Scenario.NotOn[cfg.Broker]; ok {
		r.NotApplicable = fmt.Sprintf("not on the %s broker: %s", cfg.Broker, why)
		return r
	}
	if n, _ := strconv.Atoi(cfg.Env["CONSUMER_BATCH_SIZE"]); n > 1 && c.Scenario.PerMessageOnly != "" {
		r.NotApplicable = "per-message mode only (CONSUMER_BATCH_SIZE=1): " + c.Scenario.PerMessageOnly
		return r
	}
	if c.Scenario.OutboxRelay == config.RelayLogical || cfg.Env["OUTBOX_RELAY"] == config.RelayLogical {
		if level, err := walLevel(ctx, cfg.AdminURL); err != nil || level != "logical" {
			why := fmt.Sprintf("the relay from the WAL needs wal_level = logical, and the server has %q (%v): run scripts/services.sh, or ALTER SYSTEM SET wal_level = logical and restart PostgreSQL", level, err)
			if os.Getenv("CI") != "" {
				r.Err = errors.New(why)
			} else {
				r.NotApplicable = why
			}
			return r
		}
	}
	if len(cfg.BrokerPrefix) > maxScenarioPrefix {
		r.Err = fmt.Errorf("BROKER_PREFIX %q is %d characters: the scenario runner adds 12 of its own to it for each scenario, so use at most %d",
			cfg.BrokerPrefix, len(cfg.BrokerPrefix), maxScenarioPrefix)
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	s, err := newStage(ctx, cfg, c)
	if err != nil {
		r.Err = err
		return r
	}
	r.Counts, r.Err = play(ctx, cfg, c, s)
	if r.Err == nil {
		r.Failed = r.Expect.failed(r.Counts)
	}
	if r.Err == nil && cfg.Audits {
		r.Audits, r.Err = s.audits(ctx)
	}
	keep := cfg.Keep || !r.OK()
	if keep {
		r.LogDir = s.dir
	}
	if err := s.close(keep); err != nil && r.Err == nil {
		r.Err = fmt.Errorf("tear down: %w", err)
	}
	return r
}

// walLevel is the wal_level of the server of adminURL.
func walLevel(ctx context.Context, adminURL string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var level string
	err = conn.QueryRow(ctx, "SHOW wal_level").Scan(&level)
	return level, err
}

// play runs the scenario on s and waits until the system has settled.
func play(ctx context.Context, cfg Config, c Case, s *Stage) (Counts, error) {
	s.Logf("scenario %s, without %q, broker %s, database %s, broker prefix %s", c.Scenario.Name, c.Without, cfg.Broker, s.dbName, s.brokerPrefix)
	if err := c.Scenario.Run(ctx, s); err != nil {
		return Counts{}, err
	}
	if len(s.orders) != c.Scenario.orders() {
		return Counts{}, fmt.Errorf("scenario tracked %d orders, declares %d", len(s.orders), c.Scenario.orders())
	}
	counts, err := s.settle(ctx, c.Scenario.settled, cfg.Quiet, cfg.SettleTimeout)
	s.Logf("settled: %+v (err %v)", counts, err)
	if errors.Is(err, context.DeadlineExceeded) {
		return counts, fmt.Errorf("scenario timed out: %w", err)
	}
	return counts, err
}

func label(c Case) string {
	if c.Without == "" {
		return c.Scenario.Name
	}
	return c.Scenario.Name + " --without " + c.Without
}

func logHint(r Result) string {
	if r.LogDir == "" {
		return ""
	}
	return "; logs and database kept: " + r.LogDir
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
