package bench

import (
	"fmt"
	"strings"
	"time"
)

// The CPU budget explains the first target. Throughput can be limited by
// waiting (round trips, WAL flushes, one message at a time) or by work (the
// CPU every process spends on an order). Waiting can be overlapped with more
// concurrency; work cannot: at a run's CPU time per order, the machine's
// cores can finish at most cores / (CPU per order) orders a second, whatever
// the lanes, pools or batch sizes. Comparing that bound with the ceiling says
// how far tuning alone can go.

// CPUPerTx is the CPU time, client and PostgreSQL, of one ceiling
// transaction.
func (c Ceiling) CPUPerTx() time.Duration {
	if c.Txs == 0 {
		return 0
	}
	return (c.ClientCPU + c.ServerCPU) / time.Duration(c.Txs)
}

// CPUPerOrder is the CPU time every measured process (api, worker, fakes,
// PostgreSQL, the broker and the load generator) spent per order of the run.
func (r Result) CPUPerOrder() time.Duration {
	if r.Orders == 0 {
		return 0
	}
	var total time.Duration
	for _, u := range r.Usage {
		total += u.CPU
	}
	return total / time.Duration(r.Orders)
}

// CPUBound is the most orders a second cores cores could finish at the run's
// CPU per order, if they did nothing else and never waited.
func (r Result) CPUBound(cores int) float64 {
	per := r.CPUPerOrder()
	if per <= 0 {
		return 0
	}
	return float64(cores) / per.Seconds()
}

// cpuBudgetNote is the line under the first target: the bound the median
// guards-on run's CPU per order puts on it.
func (r Report) cpuBudgetNote() string {
	runs := r.runsNamed("guards on")
	if len(runs) == 0 || r.Cores == 0 || r.Ceiling.CPUPerTx() == 0 {
		return ""
	}
	per := medianDuration(runs, Result.CPUPerOrder)
	server := medianDuration(runs, func(run Result) time.Duration { return run.cpuPerOrderOf("postgres") })
	bound := float64(r.Cores) / per.Seconds()
	ceiling := r.Ceiling.PerSecond()
	need := time.Duration(float64(r.Cores) / (0.4 * ceiling) * float64(time.Second))
	return fmt.Sprintf("guards on costs %s of CPU per order (%.1f ceiling transactions; PostgreSQL alone %s): %d cores finish at most %.0f/s = %.2f x ceiling;\n"+
		"0.4 x needs at most %s per order, whatever the concurrency",
		ms(per), per.Seconds()/r.Ceiling.CPUPerTx().Seconds(), ms(server), r.Cores, bound, bound/ceiling, ms(need))
}

// cpuPerOrderOf is the CPU time per order of the process named name.
func (r Result) cpuPerOrderOf(name string) time.Duration {
	for _, u := range r.Usage {
		if u.Name == name && r.Orders > 0 {
			return u.CPU / time.Duration(r.Orders)
		}
	}
	return 0
}

// runsNamed is the runs whose name starts with prefix.
func (r Report) runsNamed(prefix string) []Result {
	var out []Result
	for _, run := range r.Runs {
		if strings.HasPrefix(run.Name, prefix) {
			out = append(out, run)
		}
	}
	return out
}

// medianDuration is the median of f over runs (the lower middle one of an
// even count).
func medianDuration(runs []Result, f func(Result) time.Duration) time.Duration {
	ds := make([]float64, len(runs))
	for i, run := range runs {
		ds[i] = float64(f(run))
	}
	sortFloats(ds)
	return time.Duration(ds[(len(ds)-1)/2])
}

// batchBudgetNote is the line under the batch mode's target: the bound
// the batch guards-on run's CPU per order puts on it, and what that
// target (0.40 x the ceiling on postgres, 0.25 x on the others) needs.
func (r Report) batchBudgetNote() string {
	var run *Result
	for i := range r.Runs {
		if n := r.Runs[i].Name; strings.HasPrefix(n, "batch ") && strings.HasSuffix(n, "guards on") {
			run = &r.Runs[i]
		}
	}
	if run == nil || r.Cores == 0 || r.Ceiling.PerSecond() == 0 || run.CPUPerOrder() <= 0 {
		return ""
	}
	want := batchTarget(r.Broker)
	per := run.CPUPerOrder()
	bound := run.CPUBound(r.Cores)
	ceiling := r.Ceiling.PerSecond()
	need := time.Duration(float64(r.Cores) / (want * ceiling) * float64(time.Second))
	return fmt.Sprintf("%s costs %s of CPU per order: %d cores finish at most %.0f/s = %.2f x ceiling;\n"+
		"%.2f x needs at most %s per order, whatever the concurrency",
		run.Name, ms(per), r.Cores, bound, bound/ceiling, want, ms(need))
}

// batchTarget is the batch mode's end-to-end target on broker, as a
// fraction of the ceiling.
func batchTarget(broker string) float64 {
	if broker == "postgres" {
		return 0.40
	}
	return 0.25
}
