// Package config reads the process configuration from the environment, once,
// in run. Nothing below run reads the environment: everything else receives
// the values it needs as arguments.
package config

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// DevWebhookSecret is the documented development-only webhook secret. Any real
// deployment sets WEBHOOK_SECRET; the fakes and the service share this value so
// the demo works with no configuration. The api accepts it only in a dev run
// (WebhookSecretFor).
const DevWebhookSecret = "whsec_dev_only_do_not_use_in_production"

// DevVariable names the variable that marks a development, workshop or test
// run: ORDERPAID_DEV=1. `orderpaid-lab all` and `demo` are dev runs without it;
// the scenario runner, bench and soak set it for the processes they start.
const DevVariable = "ORDERPAID_DEV"

// Listen addresses when HTTP_ADDR and FAKES_ADDR are not set.
//
// Failure they prevent: anyone on the same network (a workshop's Wi-Fi)
// forging payments, switching guards off and arming faults. A dev run
// verifies webhooks with the documented dev secret and serves the lab's
// levers, and the fakes' control endpoints make the providers fail; on
// every interface, any machine that reaches the port could use them. So a
// dev run's API (ForDevRun) and the fakes listen on loopback only unless
// told otherwise. Inside a container loopback cannot be reached from
// outside it: docker-compose.yml sets HTTP_ADDR=0.0.0.0:8080 and
// FAKES_ADDR=0.0.0.0:8081, and publishes the ports on the host's 127.0.0.1
// only. A production api listens on every interface (DefaultHTTPAddr), as
// a service behind a load balancer or in a pod must.
const (
	DefaultHTTPAddr = ":8080"          // the API outside a dev run
	DevHTTPAddr     = "127.0.0.1:8080" // the API of a dev run
	DevFakesAddr    = "127.0.0.1:8081" // the fakes, in every run (they stand in for providers: never production)
)

// Broker names accepted in BROKER.
const (
	BrokerPostgres = "postgres"
	BrokerAMQP     = "amqp"
	BrokerNATS     = "nats"
	BrokerKafka    = "kafka"
)

// DefaultKafkaBrokers is KAFKA_BROKERS when it is not set.
const DefaultKafkaBrokers = "localhost:9092"

// Config is every setting the process reads from its environment.
type Config struct {
	DatabaseURL  string // DATABASE_URL
	Broker       string // BROKER: postgres, amqp, nats or kafka
	BrokerPrefix string // BROKER_PREFIX: prefix of every topic on the broker (default none)
	AMQPURL      string // AMQP_URL
	NATSURL      string // NATS_URL
	// KafkaBrokers is KAFKA_BROKERS split at its commas: the host:port of
	// one or more Kafka brokers, where the client starts (default
	// DefaultKafkaBrokers).
	KafkaBrokers []string
	// KafkaBrokersSet: KAFKA_BROKERS is set. A worker on another broker
	// looks for messages left on Kafka only then: most deployments never
	// ran one, and none should wait for a Kafka at the default address.
	KafkaBrokersSet bool
	HTTPAddr        string // HTTP_ADDR: the API listens here (default DefaultHTTPAddr; DevHTTPAddr in a dev run)
	FakesAddr       string // FAKES_ADDR: orderpaid-lab fakes listens here (default DevFakesAddr)
	FakesURL        string // FAKES_URL: where api and worker reach the fakes
	WebhookURL      string // WEBHOOK_URL: where the fake gateway delivers webhooks
	WebhookSecret   string // WEBHOOK_SECRET: HMAC secret for provider webhooks, as set (may be empty: see WebhookSecretFor)
	Dev             bool   // ORDERPAID_DEV=1: a development, workshop or test run
	// MetricsAddr is where `orderpaid worker` serves GET /metrics
	// (METRICS_ADDR, e.g. 127.0.0.1:9090; default none). The api serves
	// /metrics on HTTP_ADDR, and `all` there too. Never the profiler: see
	// ProfilerAddr.
	MetricsAddr string
	// ProfilerAddr is where a process that runs the api or the worker
	// serves Go's profiler, /debug/pprof/ (PPROF_ADDR; default none: no
	// profiler), on loopback only (LoopbackProfilerAddr).
	ProfilerAddr string

	// ShutdownTimeout bounds graceful shutdown (SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration

	// ConsumerBatchSize is how many messages a consumer may apply in one
	// transaction (CONSUMER_BATCH_SIZE, 1..MaxConsumerBatchSize, default 1:
	// one message per transaction, the per-message path).
	ConsumerBatchSize int

	// ConsumerPosition is where a batch consumer's position commits
	// (CONSUMER_POSITION): PositionSeparate (default), in the reader's own
	// transaction after the handler's; PositionWithEffects, in one
	// transaction with the effects (batch mode, on the postgres broker or
	// on Kafka, whose offsets are then kept in PostgreSQL).
	ConsumerPosition string

	// OutboxRelay is how the worker's relay reads the outbox (OUTBOX_RELAY):
	// RelayPoll (default), polling the table; RelayLogical, from a logical
	// replication slot on the outbox's inserts (needs wal_level = logical).
	OutboxRelay string

	// httpAddrSet: HTTP_ADDR is set, and a dev run keeps it (ForDevRun).
	httpAddrSet bool
}

// Values of CONSUMER_POSITION.
const (
	PositionSeparate    = "separate"
	PositionWithEffects = "with-effects"
)

// Values of OUTBOX_RELAY.
const (
	RelayPoll    = "poll"
	RelayLogical = "logical"
)

// MaxConsumerBatchSize bounds CONSUMER_BATCH_SIZE: a batch is held in
// memory and locks its orders until its transaction ends.
const MaxConsumerBatchSize = 1000

var prefixRe = regexp.MustCompile(`^[a-z0-9_]{0,40}$`)

// Variables lists every environment variable Load reads (OTEL_* are read by
// the OpenTelemetry SDK itself). The compose file test checks against it.
var Variables = []string{
	"DATABASE_URL", "BROKER", "BROKER_PREFIX", "AMQP_URL", "NATS_URL", "KAFKA_BROKERS", "HTTP_ADDR", "FAKES_ADDR",
	"FAKES_URL", "WEBHOOK_URL", "WEBHOOK_SECRET", "SHUTDOWN_TIMEOUT", "METRICS_ADDR", "PPROF_ADDR", DevVariable,
	"CONSUMER_BATCH_SIZE", "CONSUMER_POSITION", "OUTBOX_RELAY",
}

// Load fills a Config from getenv with the documented defaults and validates
// it. The error names the variable at fault and what to do about it.
func Load(getenv func(string) string) (Config, error) {
	cfg := Config{
		DatabaseURL:     cmp.Or(getenv("DATABASE_URL"), "postgres://postgres@localhost:5432/postgres?sslmode=disable"),
		Broker:          cmp.Or(getenv("BROKER"), BrokerPostgres),
		BrokerPrefix:    getenv("BROKER_PREFIX"),
		AMQPURL:         cmp.Or(getenv("AMQP_URL"), "amqp://guest:guest@localhost:5672/"),
		NATSURL:         cmp.Or(getenv("NATS_URL"), "nats://localhost:4222"),
		KafkaBrokersSet: getenv("KAFKA_BROKERS") != "",
		HTTPAddr:        cmp.Or(getenv("HTTP_ADDR"), DefaultHTTPAddr),
		httpAddrSet:     getenv("HTTP_ADDR") != "",
		FakesAddr:       cmp.Or(getenv("FAKES_ADDR"), DevFakesAddr),
		FakesURL:        cmp.Or(getenv("FAKES_URL"), "http://localhost:8081"),
		WebhookURL:      cmp.Or(getenv("WEBHOOK_URL"), "http://localhost:8080/webhooks/payments"),
		WebhookSecret:   getenv("WEBHOOK_SECRET"),
		MetricsAddr:     getenv("METRICS_ADDR"),
	}
	switch getenv(DevVariable) {
	case "":
	case "1":
		cfg.Dev = true
		cfg = cfg.ForDevRun()
	default:
		return Config{}, fmt.Errorf("%s=%q: set it to 1 for a development run, or leave it unset", DevVariable, getenv(DevVariable))
	}
	var err error
	cfg.ShutdownTimeout, err = time.ParseDuration(cmp.Or(getenv("SHUTDOWN_TIMEOUT"), "15s"))
	if err != nil || cfg.ShutdownTimeout <= 0 {
		return Config{}, fmt.Errorf("SHUTDOWN_TIMEOUT=%q: want a positive duration such as 15s", getenv("SHUTDOWN_TIMEOUT"))
	}
	if cfg.ConsumerBatchSize, err = batchSize(getenv("CONSUMER_BATCH_SIZE")); err != nil {
		return Config{}, err
	}
	switch cfg.Broker {
	case BrokerPostgres, BrokerAMQP, BrokerNATS, BrokerKafka:
	default:
		return Config{}, fmt.Errorf("BROKER=%q: want postgres, amqp, nats or kafka", cfg.Broker)
	}
	if cfg.KafkaBrokers, err = kafkaBrokers(cmp.Or(getenv("KAFKA_BROKERS"), DefaultKafkaBrokers)); err != nil {
		return Config{}, err
	}
	switch cfg.ConsumerPosition = cmp.Or(getenv("CONSUMER_POSITION"), PositionSeparate); {
	case cfg.ConsumerPosition == PositionSeparate:
	case cfg.ConsumerPosition != PositionWithEffects:
		return Config{}, fmt.Errorf("CONSUMER_POSITION=%q: want %s (the default) or %s", cfg.ConsumerPosition, PositionSeparate, PositionWithEffects)
	case cfg.Broker != BrokerPostgres && cfg.Broker != BrokerKafka:
		return Config{}, fmt.Errorf("CONSUMER_POSITION=%s needs BROKER=postgres or BROKER=kafka: the position commits with the effects only where it can be kept in their database (on BROKER=%s it is an ack the broker keeps)", PositionWithEffects, cfg.Broker)
	case cfg.ConsumerBatchSize < 2:
		return Config{}, fmt.Errorf("CONSUMER_POSITION=%s needs CONSUMER_BATCH_SIZE above 1: it is a mode of the batch reader (set CONSUMER_BATCH_SIZE=100, say)", PositionWithEffects)
	}
	switch cfg.OutboxRelay = cmp.Or(getenv("OUTBOX_RELAY"), RelayPoll); cfg.OutboxRelay {
	case RelayPoll, RelayLogical:
	default:
		return Config{}, fmt.Errorf("OUTBOX_RELAY=%q: want %s (the default: the relay polls the outbox table) or %s (it reads the outbox's inserts from a logical replication slot; needs wal_level = logical)", cfg.OutboxRelay, RelayPoll, RelayLogical)
	}
	if !prefixRe.MatchString(cfg.BrokerPrefix) {
		return Config{}, fmt.Errorf("BROKER_PREFIX=%q: use at most 40 lower-case letters, digits and underscores", cfg.BrokerPrefix)
	}
	if _, _, err := net.SplitHostPort(cfg.MetricsAddr); cfg.MetricsAddr != "" && err != nil {
		return Config{}, fmt.Errorf("METRICS_ADDR=%q: want host:port such as :9090", cfg.MetricsAddr)
	}
	if cfg.ProfilerAddr, err = LoopbackProfilerAddr(getenv("PPROF_ADDR")); err != nil {
		return Config{}, err
	}
	for name, v := range map[string]string{
		"DATABASE_URL": cfg.DatabaseURL, "AMQP_URL": cfg.AMQPURL, "NATS_URL": cfg.NATSURL,
		"FAKES_URL": cfg.FakesURL, "WEBHOOK_URL": cfg.WebhookURL,
	} {
		if u, err := url.Parse(v); err != nil || u.Scheme == "" || u.Host == "" {
			return Config{}, fmt.Errorf("%s: %q is not a URL with a scheme and a host", name, v)
		}
	}
	return cfg, nil
}

// ForDevRun returns c as a dev run uses it: the API listens on DevHTTPAddr,
// loopback only, unless HTTP_ADDR is set. Load applies it with
// ORDERPAID_DEV=1; `orderpaid-lab all` (and `demo`, which runs it) is a dev run
// without it, and applies it itself.
func (c Config) ForDevRun() Config {
	if !c.httpAddrSet {
		c.HTTPAddr = DevHTTPAddr
	}
	return c
}

// LoopbackProfilerAddr parses PPROF_ADDR: empty is no profiler, a port
// alone (:6060) is 127.0.0.1:6060, and a host other than loopback
// (127.0.0.1, ::1, localhost) is refused.
//
// Failure it prevents: anyone who reaches the port reading the process's
// secrets and taking its CPU. A heap profile is the process's memory, with
// WEBHOOK_SECRET and the database password in it; a CPU profile or an
// execution trace costs the process for as long as the caller asks. The
// profiler has no authentication, so it has a listener of its own, never
// /metrics's (which a scraper on another machine reads), and that listener
// is on loopback. From another machine, reach it through a tunnel (ssh -L,
// kubectl port-forward).
func LoopbackProfilerAddr(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", fmt.Errorf("PPROF_ADDR=%q: want host:port on loopback such as 127.0.0.1:6060 (a port alone, :6060, is on 127.0.0.1)", v)
	}
	if ip := net.ParseIP(host); host != "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("PPROF_ADDR=%q: the profiler listens on loopback only (127.0.0.1, ::1 or localhost): a heap profile holds "+
			"WEBHOOK_SECRET and the database password, and anyone reaching the port could read it; from another machine, "+
			"use a tunnel (ssh -L 6060:127.0.0.1:6060 HOST, kubectl port-forward)", v)
	}
	return net.JoinHostPort(cmp.Or(host, "127.0.0.1"), port), nil
}

// batchSize parses CONSUMER_BATCH_SIZE: empty is 1.
func batchSize(v string) (int, error) {
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxConsumerBatchSize {
		return 0, fmt.Errorf("CONSUMER_BATCH_SIZE=%q: want a whole number from 1 to %d (1, the default, is one message per transaction)", v, MaxConsumerBatchSize)
	}
	return n, nil
}

// kafkaBrokers parses KAFKA_BROKERS: host:port entries separated by
// commas (spaces around them are ignored).
func kafkaBrokers(v string) ([]string, error) {
	var brokers []string
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		host, port, err := net.SplitHostPort(entry)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("KAFKA_BROKERS=%q: %q is not host:port; want a comma-separated list such as %s or kafka1:9092,kafka2:9092",
				v, entry, DefaultKafkaBrokers)
		}
		brokers = append(brokers, entry)
	}
	return brokers, nil
}

// Kinds of webhook secret, as WebhookSecretFor reports them (for the log: the
// value itself is never logged).
const (
	SecretConfigured = "configured" // WEBHOOK_SECRET, set to a secret of the deployment's own
	SecretDev        = "dev"        // the documented DevWebhookSecret
)

// MinWebhookSecretBytes is the shortest WEBHOOK_SECRET accepted: 32 bytes,
// the size of the HMAC-SHA256 key it becomes. Providers' signing secrets are
// longer (Stripe's whsec_ secrets are 38 characters).
const MinWebhookSecretBytes = 32

// WebhookSecretFor returns the secret that verifies (api) or signs (fakes)
// webhooks, and its kind.
//
// Failure it prevents: anyone able to reach the api marking any order paid.
// With a known secret a forged payment.succeeded passes verification, and the
// commission is credited and the e-mail sent for an order nobody paid. So an
// empty WEBHOOK_SECRET does not silently become the documented one: outside a
// dev run (devRun: `orderpaid-lab all`, `demo`, or ORDERPAID_DEV=1) both an empty
// secret and the dev secret are refused, with an error saying what to set.
// A secret that can be guessed is refused in every run: one shorter than
// MinWebhookSecretBytes, and one holding whitespace, such as the dev secret
// with the trailing newline of a file or an echo, which would otherwise pass
// as a secret of the deployment's own.
func (c Config) WebhookSecretFor(devRun bool) (secret []byte, kind string, err error) {
	devRun = devRun || c.Dev
	switch {
	case strings.ContainsFunc(c.WebhookSecret, unicode.IsSpace):
		return nil, "", fmt.Errorf("WEBHOOK_SECRET holds whitespace (a trailing newline from a file or an echo?): " +
			"set the provider's signing secret exactly, without spaces or line breaks")
	case c.WebhookSecret != "" && len(c.WebhookSecret) < MinWebhookSecretBytes:
		return nil, "", fmt.Errorf("WEBHOOK_SECRET is %d bytes, too short to keep a forger out: set the payment provider's "+
			"webhook signing secret (at least %d bytes; for a test secret of your own: openssl rand -hex 32)", len(c.WebhookSecret), MinWebhookSecretBytes)
	case c.WebhookSecret != "" && c.WebhookSecret != DevWebhookSecret:
		return []byte(c.WebhookSecret), SecretConfigured, nil
	case devRun:
		return []byte(DevWebhookSecret), SecretDev, nil
	case c.WebhookSecret == "":
		return nil, "", fmt.Errorf("WEBHOOK_SECRET is empty or not set: set it to the payment provider's webhook signing secret "+
			"(or, for a development run, set %s=1 to use the documented dev secret)", DevVariable)
	default:
		return nil, "", fmt.Errorf("WEBHOOK_SECRET is the documented dev secret, which anyone can use to forge a payment: "+
			"set the payment provider's webhook signing secret (or %s=1 for a development run)", DevVariable)
	}
}
