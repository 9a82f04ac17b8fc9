package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// StackConfig says which processes to start and how to wire them.
type StackConfig struct {
	// Binary is the orderpaid binary; LogDir receives one log per process.
	Binary, LogDir string
	// DatabaseURL is the run's database.
	DatabaseURL string
	// Broker is postgres, amqp, nats or kafka; AMQPURL, NATSURL and
	// KafkaBrokers (KAFKA_BROKERS, given to the processes only when set)
	// locate the last three.
	Broker, AMQPURL, NATSURL, KafkaBrokers string
	// Prefix is the BROKER_PREFIX of the run, so runs never share a queue.
	Prefix string
	// Without lists the guards switched off (--without), "" for all on.
	Without string
	// Workers is the number of `orderpaid-lab worker` processes (default 1).
	Workers int
	// NoAPI starts fakes and workers only (the backfill run).
	NoAPI bool
	// BatchSize is the workers' CONSUMER_BATCH_SIZE (0: the default, 1).
	BatchSize int
	// Position is the workers' CONSUMER_POSITION ("": the default).
	Position string
	// OutboxRelay is the OUTBOX_RELAY of api and workers: poll (the
	// default, "") or logical (the relay from the WAL; needs wal_level =
	// logical on the server).
	OutboxRelay string
	// ProvidersURL, when set, is the FAKES_URL of api and workers instead
	// of the fakes' own address (a proxy in front of the providers), and
	// WebhookURL where the fakes deliver their webhooks instead of the
	// api's /webhooks/payments (a proxy in front of the api): the soak's
	// reconcile mode slows the gateway and loses webhooks there.
	ProvidersURL, WebhookURL string
}

// Stack is fakes, api and workers running as child processes.
type Stack struct {
	cfg StackConfig
	// API and Fakes are the base URLs of the api and the fakes.
	API, Fakes string
	// Secret is the webhook secret the api checks.
	Secret string
	env    []string

	mu      sync.Mutex
	fakes   *Proc
	api     *Proc
	apis    int // api processes started so far, for their names
	workers []*Proc
	// metrics are the /metrics URLs of the workers started, in order.
	metrics []string
	started int // workers started so far, for their names
}

// StartStack starts `orderpaid-lab fakes`, `orderpaid-lab api` and cfg.Workers
// `orderpaid-lab worker` processes, and waits until each says it is listening.
func StartStack(ctx context.Context, cfg StackConfig) (*Stack, error) {
	apiAddr, err := childproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	fakesAddr, err := childproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, API: "http://" + apiAddr, Fakes: "http://" + fakesAddr, Secret: config.DevWebhookSecret}
	s.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + cfg.DatabaseURL,
		"BROKER=" + cfg.Broker, "BROKER_PREFIX=" + cfg.Prefix,
		"AMQP_URL=" + cmp.Or(cfg.AMQPURL, "amqp://guest:guest@127.0.0.1:5672/"),
		"NATS_URL=" + cmp.Or(cfg.NATSURL, "nats://127.0.0.1:4222"),
		"HTTP_ADDR=" + apiAddr, "FAKES_ADDR=" + fakesAddr,
		"FAKES_URL=" + cmp.Or(cfg.ProvidersURL, s.Fakes), "WEBHOOK_URL=" + cmp.Or(cfg.WebhookURL, s.API+"/webhooks/payments"),
		"WEBHOOK_SECRET=" + s.Secret,
		config.DevVariable + "=1", // a lab run: the api accepts the dev secret
		"CONSUMER_BATCH_SIZE=" + fmt.Sprint(max(cfg.BatchSize, 1)),
		"OUTBOX_RELAY=" + cmp.Or(cfg.OutboxRelay, config.RelayPoll),
	}
	if cfg.Position != "" {
		s.env = append(s.env, "CONSUMER_POSITION="+cfg.Position)
	}
	if cfg.KafkaBrokers != "" {
		s.env = append(s.env, "KAFKA_BROKERS="+cfg.KafkaBrokers)
	}
	if s.fakes, err = s.start(ctx, "fakes", "fakes listening on", nil, "fakes"); err != nil {
		return nil, err
	}
	if !cfg.NoAPI {
		if _, err = s.RestartAPI(ctx); err != nil {
			return nil, errors.Join(err, s.Stop())
		}
	}
	for range max(cfg.Workers, 1) {
		if _, err := s.StartWorker(ctx); err != nil {
			return nil, errors.Join(err, s.Stop())
		}
	}
	return s, nil
}

// RestartAPI starts an `orderpaid-lab api` on the api's address and waits until
// it listens: the first one, or a new one once the last has exited (the
// soak SIGKILLs it). Each has a log of its own: api.log, api2.log, ...
func (s *Stack) RestartAPI(ctx context.Context) (*Proc, error) {
	s.mu.Lock()
	last := s.api
	s.apis++
	name := "api"
	if s.apis > 1 {
		name = fmt.Sprintf("api%d", s.apis)
	}
	s.mu.Unlock()
	if last != nil && !last.Exited() {
		return nil, fmt.Errorf("start %s: %s still runs on %s", name, last.Name, s.API)
	}
	p, err := s.start(ctx, name, "api listening on", nil, "api", "--without", s.cfg.Without)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.api = p
	return p, nil
}

// APIProc returns the api process started last (nil with NoAPI).
func (s *Stack) APIProc() *Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.api
}

// StartWorker starts one more `orderpaid-lab worker` (with its /metrics on a
// port of its own) and waits until it runs.
func (s *Stack) StartWorker(ctx context.Context) (*Proc, error) {
	s.mu.Lock()
	s.started++
	name := fmt.Sprintf("worker%d", s.started)
	s.mu.Unlock()
	metricsAddr, err := childproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	p, err := s.start(ctx, name, "worker running", []string{"METRICS_ADDR=" + metricsAddr}, "worker", "--without", s.cfg.Without)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workers = append(s.workers, p)
	s.metrics = append(s.metrics, "http://"+metricsAddr+"/metrics")
	return p, nil
}

// MetricsURLs are the /metrics URLs of the workers started so far.
func (s *Stack) MetricsURLs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.metrics...)
}

func (s *Stack) start(ctx context.Context, name, ready string, extraEnv []string, args ...string) (*Proc, error) {
	env := append(append([]string(nil), s.env...), extraEnv...)
	p, err := StartProc(s.cfg.Binary, s.cfg.LogDir, name, env, args)
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitLine(ctx, ready, 60*time.Second); err != nil {
		return nil, errors.Join(err, p.Kill())
	}
	return p, nil
}

// Workers returns the worker processes started so far, running or not.
func (s *Stack) Workers() []*Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Proc(nil), s.workers...)
}

// Procs returns every process started: fakes, api, then the workers.
func (s *Stack) Procs() []*Proc {
	var out []*Proc
	for _, p := range []*Proc{s.fakes, s.APIProc()} {
		if p != nil {
			out = append(out, p)
		}
	}
	return append(out, s.Workers()...)
}

// Stop stops every process with SIGTERM (workers first, so that none is cut
// off from the database it is still writing to) and reports those that did
// not stop cleanly.
func (s *Stack) Stop() error {
	var errs []error
	for _, w := range s.Workers() {
		errs = append(errs, w.Stop(30*time.Second))
	}
	for _, p := range []*Proc{s.APIProc(), s.fakes} {
		if p != nil {
			errs = append(errs, p.Stop(30*time.Second))
		}
	}
	return errors.Join(errs...)
}
