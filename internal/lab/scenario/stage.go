package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Stage is one scenario's world: its own database, its own ports on
// 127.0.0.1, the orderpaid processes it started, and the orders it paid.
// Scenarios drive it; the runner builds it and tears it down.
type Stage struct {
	cfg     Config
	without string
	relay   string // the scenario's OUTBOX_RELAY, when it has one
	dir     string // logs of every process and command

	dbName, dbURL string
	pool          *pgxpool.Pool
	q             *queries.Queries

	apiAddr, fakesAddr string
	brokerPrefix       string
	procs              []*childproc.Proc
	started            map[string]int

	orders []uuid.UUID
	// kafkaRecordsCommitted and kafkaRecordsWritten are what
	// kafka-exactly-once-is-not-enough counted on its output topic.
	kafkaRecordsCommitted, kafkaRecordsWritten int64
	http                                       *http.Client
	notes                                      *os.File
	closers                                    []func()
}

// newStage creates the database (migrated by `orderpaid migrate`) and picks
// the ports; no service runs yet.
func newStage(ctx context.Context, cfg Config, c Case) (_ *Stage, err error) {
	s := &Stage{
		cfg: cfg, without: c.Without, relay: c.Scenario.OutboxRelay, started: map[string]int{},
		brokerPrefix: cfg.BrokerPrefix + "scn" + tempdb.RandomHex(4) + "_", http: &http.Client{Timeout: 30 * time.Second},
	}
	if s.dir, err = os.MkdirTemp(cfg.LogDir, "orderpaid-scenario-"+c.Scenario.Name+"-"); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	if s.notes, err = os.Create(filepath.Join(s.dir, "scenario.log")); err != nil {
		return nil, fmt.Errorf("create scenario log: %w", err)
	}
	defer func() {
		if err != nil {
			s.close(true)
		}
	}()
	if s.apiAddr, err = childproc.FreeAddr(); err != nil {
		return nil, err
	}
	if s.fakesAddr, err = childproc.FreeAddr(); err != nil {
		return nil, err
	}
	// An empty database: `orderpaid migrate` applies the schema, as an
	// operator would.
	name := "orderpaid_scn_" + strings.ReplaceAll(c.Scenario.Name, "-", "_") + "_" + tempdb.RandomHex(3)
	if s.dbURL, err = tempdb.Create(ctx, cfg.AdminURL, name); err != nil {
		return nil, err
	}
	s.dbName = name
	if _, err := s.Command(ctx, "migrate"); err != nil {
		return nil, err
	}
	if s.pool, err = postgres.Connect(ctx, s.dbURL); err != nil {
		return nil, err
	}
	s.q = queries.New(s.pool)
	return s, nil
}

// close stops every process still running (SIGTERM, then SIGKILL), then
// drops the database and the logs unless keep, and deletes the queues and
// streams of RabbitMQ or NATS unless the runner's Keep.
func (s *Stage) close(keep bool) error {
	var errs []error
	for _, fn := range s.closers {
		fn()
	}
	for _, p := range s.procs {
		if err := p.Terminate(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.cfg.Broker != "postgres" && !s.cfg.Keep {
		if err := deleteBrokerObjects(s.cfg.Broker, s.cfg.Env, s.brokerPrefix); err != nil {
			errs = append(errs, err)
		} else {
			s.Logf("deleted the broker's queues and streams under prefix %s", s.brokerPrefix)
		}
	}
	if s.notes != nil {
		s.notes.Close()
	}
	if !keep && s.dbName != "" {
		errs = append(errs, tempdb.Drop(s.cfg.AdminURL, s.dbName))
	}
	if !keep && s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}

// onClose runs fn when the stage closes.
func (s *Stage) onClose(fn func()) { s.closers = append(s.closers, fn) }

// Logf writes one line to the scenario's own log (scenario.log).
func (s *Stage) Logf(format string, args ...any) {
	fmt.Fprintf(s.notes, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// APIURL and FakesURL are where this stage's API and fakes listen.
func (s *Stage) APIURL() string   { return "http://" + s.apiAddr }
func (s *Stage) FakesURL() string { return "http://" + s.fakesAddr }

// env is the whole environment of a child: nothing is inherited but what
// Config.Env passes on. override wins.
func (s *Stage) env(override map[string]string) []string {
	vars := map[string]string{
		"DATABASE_URL":     s.dbURL,
		"BROKER":           s.cfg.Broker,
		"HTTP_ADDR":        s.apiAddr,
		"FAKES_ADDR":       s.fakesAddr,
		"FAKES_URL":        s.FakesURL(),
		"WEBHOOK_URL":      s.APIURL() + "/webhooks/payments",
		"SHUTDOWN_TIMEOUT": "5s",
		// A lab run: the api accepts the documented dev secret.
		config.DevVariable: "1",
	}
	if s.cfg.Broker != "postgres" {
		// RabbitMQ and NATS are shared by every scenario: each gets its own
		// exchanges, queues and streams.
		vars["BROKER_PREFIX"] = s.brokerPrefix
	}
	for k, v := range s.cfg.Env {
		vars[k] = v
	}
	if s.relay != "" {
		vars["OUTBOX_RELAY"] = s.relay
	}
	for k, v := range override {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// Start runs the usual topology as three processes: `orderpaid-lab fakes`,
// `orderpaid-lab api` and one `orderpaid-lab worker` with workerArgs (--faults ...).
func (s *Stage) Start(ctx context.Context, workerArgs ...string) error {
	if err := s.StartFakes(ctx); err != nil {
		return err
	}
	if err := s.StartAPI(ctx); err != nil {
		return err
	}
	_, err := s.StartWorker(ctx, nil, workerArgs...)
	return err
}

// StartFakes starts `orderpaid-lab fakes` and waits until it listens.
func (s *Stage) StartFakes(ctx context.Context) error {
	_, err := s.start(ctx, "fakes", nil, "fakes listening on ", []string{"fakes"})
	return err
}

// StartAPI starts `orderpaid-lab api` (with the stage's --without) and waits
// until it listens.
func (s *Stage) StartAPI(ctx context.Context) error {
	_, err := s.start(ctx, "api", nil, "api listening on ", s.guardArgs("api"))
	return err
}

// StartAPIWith starts one more `orderpaid-lab api` with the stage's --without
// and args (--crash-at, --lease), and waits until it listens.
func (s *Stage) StartAPIWith(ctx context.Context, args ...string) (*childproc.Proc, error) {
	return s.start(ctx, "api", nil, "api listening on ", append(s.guardArgs("api"), args...))
}

// StartWorker starts one more `orderpaid-lab worker` (with the stage's --without
// and args), with env overriding the stage's environment, and waits until
// its consumers run.
func (s *Stage) StartWorker(ctx context.Context, env map[string]string, args ...string) (*childproc.Proc, error) {
	return s.start(ctx, "worker", env, "worker running", append(s.guardArgs("worker"), args...))
}

func (s *Stage) guardArgs(sub string) []string {
	if s.without == "" {
		return []string{sub}
	}
	return []string{sub, "--without", s.without}
}

func (s *Stage) start(ctx context.Context, kind string, env map[string]string, ready string, args []string) (*childproc.Proc, error) {
	s.started[kind]++
	name := fmt.Sprintf("%s-%d", kind, s.started[kind])
	p, err := childproc.Start(s.cfg.Bin, s.dir, name, s.env(env), args)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	if _, err := p.WaitLine(ctx, ready, 30*time.Second); err != nil {
		return nil, err
	}
	s.Logf("started %s (pid %d): orderpaid %s", name, p.PID(), strings.Join(args, " "))
	return p, nil
}

// Command runs `orderpaid args...` to completion against the stage (an
// operator's command: migrate, backfill, reprocess) and returns its output.
func (s *Stage) Command(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.cfg.Bin, args...)
	cmd.Env = s.env(nil)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s.Logf("$ orderpaid %s\n%s", strings.Join(args, " "), out.String())
	if err != nil {
		return out.String(), fmt.Errorf("orderpaid %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// Track adds an order to those the stage counts.
func (s *Stage) Track(id uuid.UUID) { s.orders = append(s.orders, id) }

// waitCrashed waits for w to end on the crash fault (--faults NAME=crash):
// exit 137, as a SIGKILL. Another ending is an error naming w's log.
func (s *Stage) waitCrashed(ctx context.Context, w *childproc.Proc) error {
	if err := w.WaitExit(ctx, 30*time.Second); err != nil {
		return err
	}
	if code := w.ExitCode(); code != 137 {
		return fmt.Errorf("worker exited with %d, want the crash fault's 137; see %s", code, w.LogPath())
	}
	return nil
}
