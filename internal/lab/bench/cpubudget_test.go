package bench_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
)

// The CPU budget divides the CPU of every process by the orders, and bounds
// throughput by the cores that CPU can be spread over.
func TestCPUBudget(t *testing.T) {
	t.Parallel()
	run := func(name string, perOrder time.Duration) bench.Result {
		const orders = 1000
		// Split the run's CPU between two processes, as a run reports it.
		total := perOrder * orders
		return bench.Result{Spec: bench.Spec{Name: name}, Orders: orders, Elapsed: 10 * time.Second,
			Usage: []bench.Usage{{Name: "worker1", CPU: total / 4}, {Name: "postgres", CPU: total - total/4}}}
	}
	rep := bench.Report{
		Cores: 2,
		// 1,000 tx/s at 1 ms of CPU each (client 250 µs, server 750 µs).
		Ceiling: bench.Ceiling{Workers: 16, Txs: 1000, Elapsed: time.Second, ClientCPU: 250 * time.Millisecond, ServerCPU: 750 * time.Millisecond},
		Runs:    []bench.Result{run("guards on #1", 8*time.Millisecond), run("guards off #1", time.Millisecond), run("guards on #2", 4*time.Millisecond), run("guards on #3", 10*time.Millisecond)},
	}
	if got := rep.Ceiling.CPUPerTx(); got != time.Millisecond {
		t.Errorf("ceiling CPU per transaction = %s, want 1ms", got)
	}
	on := rep.Runs[0]
	if got := on.CPUPerOrder(); got != 8*time.Millisecond {
		t.Errorf("CPU per order = %s, want 8ms", got)
	}
	if got := on.CPUBound(rep.Cores); got != 250 {
		t.Errorf("bound = %.1f orders/s, want 250 (2 cores / 8 ms)", got)
	}
	var out bytes.Buffer
	rep.Print(&out)
	// The note takes the median guards-on run (8 ms of 4, 8 and 10), not the
	// guards-off one: 2 cores / 8 ms = 250/s = 0.25 of 1,000; 0.4 x 1,000/s
	// on 2 cores leaves 5 ms per order.
	for _, want := range []string{
		"CPU budget: guards on costs 8.0ms of CPU per order (8.0 ceiling transactions; PostgreSQL alone 6.0ms): 2 cores finish at most 250/s = 0.25 x ceiling;",
		"0.4 x needs at most 5.0ms per order",
		"together 1.0ms",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// In batch mode the budget bounds the batch run by its own CPU per order,
// against the batch target of the broker: 0.25 x the ceiling on amqp.
func TestCPUBudgetOfABatchRun(t *testing.T) {
	t.Parallel()
	const orders = 1000
	rep := bench.Report{
		Cores: 2, Broker: "amqp",
		Ceiling: bench.Ceiling{Workers: 16, Txs: 1000, Elapsed: time.Second, ClientCPU: 250 * time.Millisecond, ServerCPU: 750 * time.Millisecond},
		Runs: []bench.Result{
			{Spec: bench.Spec{Name: "guards on"}, Orders: orders, Elapsed: 10 * time.Second, Usage: []bench.Usage{{Name: "worker1", CPU: 8 * time.Second}}},
			{Spec: bench.Spec{Name: "batch 100, guards on"}, Orders: orders, Elapsed: 5 * time.Second, Usage: []bench.Usage{{Name: "worker1", CPU: 4 * time.Second}}},
		},
	}
	var out bytes.Buffer
	rep.Print(&out)
	// 2 cores / 4 ms = 500/s = 0.50 of 1,000; 0.25 x 1,000/s on 2 cores
	// leaves 8 ms per order.
	for _, want := range []string{
		"CPU budget: batch 100, guards on costs 4.0ms of CPU per order: 2 cores finish at most 500/s = 0.50 x ceiling;",
		"0.25 x needs at most 8.0ms per order",
		"end to end, batch 100, guards on >= 0.25 x ceiling",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
