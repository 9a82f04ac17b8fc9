package bench_test

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// A small benchmark on the postgres broker runs end to end with real
// processes, with every guard on and with every guard off, and its report
// holds together: every order notified once, every effect counted once,
// throughput and usage measured. (The numbers themselves are judged by
// `orderpaid-lab bench` on a quiet machine, not here.)
func TestSmallBenchmarkCountsEveryEffectOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel()
	pgtest.NewDatabase(t) // skips (or fails in CI) when PostgreSQL is down
	const orders = 150
	bin, err := childproc.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := bench.Suite(t.Context(), bench.Config{
		Binary: bin, AdminURL: pgtest.AdminURL(), Broker: "postgres", LogDir: t.TempDir(),
		Orders: orders, Senders: 4, CeilingWorkers: 4, CeilingTxs: 200, Progress: testWriter{t},
	}, bench.Plan{GuardsOff: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ceiling.PerSecond() <= 0 || len(rep.Runs) != 2 {
		t.Fatalf("ceiling %.0f/s and %d runs, want a positive ceiling and 2 runs", rep.Ceiling.PerSecond(), len(rep.Runs))
	}
	for _, run := range rep.Runs {
		e := run.Effects
		if run.Orders != orders || run.Throughput() <= 0 || len(run.E2E) != orders {
			t.Errorf("%s: %d orders, %.0f/s, %d latencies", run.Name, run.Orders, run.Throughput(), len(run.E2E))
		}
		if e.Paid != orders || e.Commission != orders || e.AtProvider != orders || e.WrongCount != 0 || e.CommissionCents != e.WantCents {
			t.Errorf("%s: effects %+v, want %d of each and none wrong", run.Name, e, orders)
		}
		if run.RelayLag.Count() == 0 {
			t.Errorf("%s: no relay lag observed on the worker's /metrics", run.Name)
		}
		var workerRSS int64
		for _, u := range run.Usage {
			if u.Name == "worker1" {
				workerRSS = u.PeakRSSKB
			}
		}
		if run.CPUPerOrder() <= 0 || run.CPUBound(rep.Cores) <= 0 {
			t.Errorf("%s: CPU per order %s, bound %.0f/s on %d cores, want both positive", run.Name, run.CPUPerOrder(), run.CPUBound(rep.Cores), rep.Cores)
		}
		if workerRSS == 0 {
			t.Errorf("%s: no peak RSS read for the worker: %+v", run.Name, run.Usage)
		}
	}
	if e := rep.Runs[0].Effects; e.ConfirmationEnqueued != orders || e.ConfirmationDelivered != orders {
		t.Errorf("guards on: %d confirmations enqueued, %d delivered, want %d", e.ConfirmationEnqueued, e.ConfirmationDelivered, orders)
	}
	var out bytes.Buffer
	rep.Print(&out)
	for _, want := range []string{"ceiling:", "relay:   poll", "guards on", "guards off", "targets (docs/performance.md#targets)", "every effect once: guards on", "CPU budget: guards on costs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("report:\n%s", out.String())
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Quantile interpolates inside the bucket holding the rank, as Prometheus's
// histogram_quantile does.
func TestHistogramQuantile(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	h := bench.Histogram{Bounds: []float64{0.01, 0.1, 1, inf}, Counts: []float64{50, 90, 100, 100}}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 10 * time.Millisecond},
		{0.7, 55 * time.Millisecond},
		{0.99, 910 * time.Millisecond},
	} {
		if got := h.Quantile(tt.q).Round(time.Millisecond); got != tt.want {
			t.Errorf("Quantile(%v) = %s, want %s", tt.q, got, tt.want)
		}
	}
	if got := (bench.Histogram{}).Quantile(0.5); got != 0 {
		t.Errorf("empty histogram: %s, want 0", got)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	t.Parallel()
	var l bench.Latencies
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	if got := l.Percentile(50); got != 50*time.Millisecond {
		t.Errorf("p50 = %s, want 50ms", got)
	}
	if got := l.Percentile(99); got != 99*time.Millisecond {
		t.Errorf("p99 = %s, want 99ms", got)
	}
}

// The benchmark reads CPU time and peak RSS of real processes from /proc.
func TestProcUsageOfARealProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := bench.StartProc("/bin/sh", dir, "spin", []string{"PATH=" + os.Getenv("PATH")},
		[]string{"-c", "echo started; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if _, err := p.WaitLine(t.Context(), "started", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		cpu, peak := p.Usage()
		if cpu > 0 && peak > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cpu %s, peak RSS %dkB after 20s, want both positive", cpu, peak)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
