package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/kafkalab"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// Plan says which runs one invocation makes besides the ceiling and the
// guards-on run at full load.
type Plan struct {
	// GuardsOff adds a run with every guard off (--without all of them).
	GuardsOff bool
	// HalfLoad adds a guards-on run paced at half the full-load throughput,
	// where relay lag is judged.
	HalfLoad bool
	// InboxRows, if not 0, adds a guards-on run with that many old rows in
	// each inbox.
	InboxRows int
	// Backfill, if not 0, adds a backfill of that many orders.
	Backfill int
	// BatchSize, above 1, adds a guards-on run and a guards-off run in
	// batch mode, that many messages per transaction (CONSUMER_BATCH_SIZE).
	BatchSize int
	// Repeat runs guards on (and guards off) this many times, alternately
	// (default 1); the targets use the median of each, because two runs on
	// a shared two-core machine differ by ten percent.
	Repeat int
}

// Report is everything one invocation measured, with where it ran.
type Report struct {
	Date            time.Time
	Machine, Server string
	Broker          string
	// Relay is the OUTBOX_RELAY every run's api and worker ran with.
	Relay string
	// Cores is the number of CPUs the processes share (runtime.NumCPU).
	Cores    int
	Ceiling  Ceiling
	Runs     []Result
	Backfill *BackfillResult
}

// Suite measures the ceiling, then every run of plan, one after the other
// (never two at once: they would share the two cores).
func Suite(ctx context.Context, cfg Config, plan Plan) (Report, error) {
	cfg = cfg.withDefaults()
	rep := Report{Date: time.Now().UTC(), Machine: machine(), Broker: cfg.Broker, Relay: cfg.Relay, Cores: runtime.NumCPU()}
	if cfg.Relay == config.RelayLogical {
		// Before anything is measured: every api and worker of the runs
		// would refuse to start without it.
		if err := RequireLogical(ctx, cfg.AdminURL); err != nil {
			return rep, err
		}
	}
	if cfg.Broker == config.BrokerKafka && cfg.KafkaBrokers == "" {
		cluster, err := kafkalab.Start()
		if err != nil {
			return rep, err
		}
		defer cluster.Close()
		cfg.KafkaBrokers, cfg.kafkaInProcess = cluster.Brokers(), true
		rep.Broker = "kafka (in-process cluster: franz-go's kfake, not a real Kafka)"
		fmt.Fprintf(cfg.Progress, "bench: KAFKA_BROKERS is not set: the runs use an in-process Kafka cluster at %s (franz-go's kfake, inside this process: its CPU counts in the bench+kafka column; gone when the bench ends); set KAFKA_BROKERS to measure a real one\n", cfg.KafkaBrokers)
	}
	d, err := CreateDatabase(ctx, cfg.AdminURL, "orderpaid_bench")
	if err != nil {
		return rep, err
	}
	rep.Server = ServerInfo(ctx, d.Pool)
	fmt.Fprintf(cfg.Progress, "bench: ceiling: %d effect-step transactions by %d goroutines\n", cfg.CeilingTxs, cfg.CeilingWorkers)
	// The ceiling gets a connection per goroutine, whatever the services'
	// default pool size.
	pool, err := postgres.Connect(ctx, withParam(d.URL, "pool_max_conns", fmt.Sprint(cfg.CeilingWorkers)))
	if err == nil {
		rep.Ceiling, err = MeasureCeiling(ctx, pool, cfg.CeilingWorkers, cfg.CeilingTxs)
		pool.Close()
	}
	if dropErr := d.Drop(); err == nil {
		err = dropErr
	}
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(cfg.Progress, "bench: ceiling: %.0f tx/s\n", rep.Ceiling.PerSecond())

	repeat := max(plan.Repeat, 1)
	for i := range repeat {
		suffix := ""
		if repeat > 1 {
			suffix = fmt.Sprintf(" #%d", i+1)
		}
		specs := []Spec{{Name: "guards on" + suffix}}
		if plan.GuardsOff {
			specs = append(specs, Spec{Name: "guards off" + suffix, Without: strings.Join(switches.Names(), ",")})
		}
		for _, spec := range specs {
			r, err := RunOne(ctx, cfg, spec)
			if err != nil {
				return rep, err
			}
			rep.Runs = append(rep.Runs, r)
		}
	}
	specs := []Spec{}
	if plan.HalfLoad {
		on, _ := rep.median("guards on")
		specs = append(specs, Spec{Name: "half load", Rate: on / 2})
	}
	if plan.BatchSize > 1 {
		on := Spec{Name: fmt.Sprintf("batch %d, guards on", plan.BatchSize), BatchSize: plan.BatchSize}
		r, err := RunOne(ctx, cfg, on)
		if err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, r)
		// No guards-off run in batch mode: with a guard off, batch mode
		// runs one message at a time (internal/lab/switches), so it would
		// measure the per-message path again.
		if plan.HalfLoad {
			specs = append(specs, Spec{Name: fmt.Sprintf("batch %d, half load", plan.BatchSize), BatchSize: plan.BatchSize,
				Rate: r.Throughput() / 2})
		}
	}
	if plan.InboxRows > 0 {
		specs = append(specs, Spec{Name: fmt.Sprintf("inbox %s", shortCount(plan.InboxRows)), InboxRows: plan.InboxRows})
	}
	for _, spec := range specs {
		r, err := RunOne(ctx, cfg, spec)
		if err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, r)
	}
	if plan.Backfill > 0 {
		b, err := RunBackfill(ctx, cfg, plan.Backfill, plan.BatchSize)
		if err != nil {
			return rep, err
		}
		rep.Backfill = &b
	}
	return rep, nil
}

// machine describes the CPU for the report: model name and count.
func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d x %s, %s/%s", runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH)
}

// shortCount writes 5000000 as 5M and 20000 as 20k.
func shortCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// withParam adds a query parameter to a database URL.
func withParam(rawURL, key, value string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
