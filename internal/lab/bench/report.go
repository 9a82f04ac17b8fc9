package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Print writes the report as the tables docs/performance.md shows.
func (r Report) Print(w io.Writer) {
	fmt.Fprintf(w, "orderpaid-lab bench, %s\n", r.Date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "machine: %s\nserver:  %s\nbroker:  %s\nrelay:   %s\n", r.Machine, r.Server, r.Broker, relayLabel(r.Relay))
	c := r.Ceiling
	fmt.Fprintf(w, "ceiling: %.0f tx/s (effect step: state-check UPDATE + transition row + outbox row in one transaction, %d goroutines, %d transactions;\n"+
		"         CPU per transaction: client %s, PostgreSQL %s, together %s)\n\n",
		c.PerSecond(), c.Workers, c.Txs, perTx(c.ClientCPU, c.Txs), perTx(c.ServerCPU, c.Txs), ms(c.CPUPerTx()))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\torders\torders/s\tx ceiling\te2e p50\te2e p99\trelay p50\trelay p99\tretries\t")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%s\t%s\t%s\t%s\t%d\t\n", run.Name, run.Orders, run.Throughput(),
			run.Throughput()/r.Ceiling.PerSecond(), ms(run.E2E.Percentile(50)), ms(run.E2E.Percentile(99)),
			ms(run.RelayLag.Quantile(0.5)), ms(run.RelayLag.Quantile(0.99)), run.Retries)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nexecutions vs effects, summed over each run's orders (db: as GET /orders/{id}/audit counts; provider: GET /notifications)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\texec order_paid\texec order_confirmed\tpaid\tcommission\tenqueued\tdelivered\tsent (db)\tsent (provider)\tcommission sum\torders wrong\t")
	for _, run := range r.Runs {
		e := run.Effects
		sum := "exact"
		if e.CommissionCents != e.WantCents {
			sum = fmt.Sprintf("%d, want %d", e.CommissionCents, e.WantCents)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t\n", run.Name, e.ExecutionsOrderPaid, e.ExecutionsOrderConfirmed,
			e.Paid, e.Commission, e.ConfirmationEnqueued, e.ConfirmationDelivered, e.NotificationSent, e.AtProvider, sum, e.WrongCount)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nCPU (cores busy on average during the run) and peak RSS (VmHWM); CPU per order of all of them, and the most")
	fmt.Fprintf(w, "orders/s %d cores could finish at that cost (see docs/performance.md, \"What limits throughput\")\n", r.Cores)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(r.Runs) > 0 {
		header := []string{"run"}
		for _, u := range r.Runs[0].Usage {
			header = append(header, u.Name)
		}
		header = append(header, "CPU/order", "bound", "x ceiling")
		fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	}
	for _, run := range r.Runs {
		bound := run.CPUBound(r.Cores)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f/s\t%.2f\t\n", run.Name, usageCells(run.Usage), ms(run.CPUPerOrder()), bound, bound/r.Ceiling.PerSecond())
	}
	tw.Flush()

	if b := r.Backfill; b != nil {
		mode := "one message per transaction"
		if b.BatchSize > 1 {
			mode = fmt.Sprintf("batch mode, %d per batch", b.BatchSize)
		}
		fmt.Fprintf(w, "\nbackfill: %d paid orders re-emitted in %s, handled by one worker (%s) in %s (%.0f/s); worker peak RSS %s\n",
			b.Orders, b.Enqueue.Round(time.Second), mode, b.Elapsed.Round(time.Second), float64(b.Orders)/b.Elapsed.Seconds(), mb(b.WorkerPeakRSSKB))
		parts := make([]string, len(b.Usage))
		for i, u := range b.Usage {
			parts[i] = u.Name + " " + strings.ReplaceAll(usageCells([]Usage{u}), "\t", " ")
		}
		fmt.Fprintf(w, "  CPU and peak RSS during the backfill: %s\n", strings.Join(parts, ", "))
	}

	fmt.Fprintln(w, "\ntargets (docs/performance.md#targets)")
	for _, t := range r.Targets() {
		mark := "met    "
		if !t.Met {
			mark = "NOT MET"
		}
		fmt.Fprintf(w, "  [%s] %-52s %s\n", mark, t.Name, t.Got)
	}
	for _, note := range []string{r.cpuBudgetNote(), r.batchBudgetNote()} {
		if note != "" {
			fmt.Fprintf(w, "\nCPU budget: %s\n", strings.ReplaceAll(note, "\n", "\n            "))
		}
	}
}

// relayLabel says what OUTBOX_RELAY=relay means, for the report's header.
func relayLabel(relay string) string {
	switch relay {
	case config.RelayLogical:
		return "logical (OUTBOX_RELAY=logical: the outbox's inserts read from a logical replication slot)"
	case config.RelayPoll:
		return "poll (OUTBOX_RELAY=poll: the outbox table polled)"
	}
	return relay
}

func usageCells(us []Usage) string {
	cells := make([]string, len(us))
	for i, u := range us {
		cells[i] = fmt.Sprintf("%.2f", u.Core)
		if u.PeakRSSKB > 0 {
			cells[i] += " " + mb(u.PeakRSSKB)
		}
	}
	return strings.Join(cells, "\t")
}

// Target is one performance target (docs/performance.md#targets), judged
// on the report.
type Target struct {
	Name string
	Got  string
	Met  bool
}

// Targets judges the report against the performance targets. Targets whose
// run was not made are left out.
func (r Report) Targets() []Target {
	var out []Target
	find := func(prefix string) *Result {
		for i := range r.Runs {
			if strings.HasPrefix(r.Runs[i].Name, prefix) {
				return &r.Runs[i]
			}
		}
		return nil
	}
	ceiling := r.Ceiling.PerSecond()
	on, ons := r.median("guards on")
	if ons > 0 {
		out = append(out, Target{"end to end >= 0.4 x ceiling", fmt.Sprintf("%.2f x (%.0f of %.0f/s%s)", on/ceiling, on, ceiling, medianOf(ons)), on/ceiling >= 0.4})
	}
	if runs := r.runsNamed("guards on"); ons > 0 && r.Cores > 0 {
		// Waiting against work: how close one message per transaction
		// comes to what its own CPU per order allows (cpubudget.go).
		per := medianDuration(runs, Result.CPUPerOrder)
		if bound := float64(r.Cores) / per.Seconds(); per > 0 {
			out = append(out, Target{"per message, guards on >= 0.9 x its CPU bound",
				fmt.Sprintf("%.2f x (%.0f of %.0f/s at %s of CPU per order)", on/bound, on, bound, ms(per)), on/bound >= 0.9})
		}
	}
	if off, offs := r.median("guards off"); ons > 0 && offs > 0 {
		out = append(out, Target{"guards on >= 0.9 x guards off", fmt.Sprintf("%.2f x (%.0f vs %.0f/s%s)", on/off, on, off, medianOf(offs)), on/off >= 0.9})
	}
	for _, run := range r.Runs {
		if !strings.HasSuffix(run.Name, "half load") {
			continue
		}
		p99 := run.RelayLag.Quantile(0.99)
		name := "relay lag p99 <= 250ms at half load"
		if run.Name != "half load" {
			name += ", " + strings.TrimSuffix(run.Name, ", half load")
		}
		out = append(out, Target{name, ms(p99) + fmt.Sprintf(" (%d relayed)", run.RelayLag.Count()), p99 <= 250*time.Millisecond})
	}
	if inbox := find("inbox"); ons > 0 && inbox != nil {
		ratio := inbox.Throughput() / on
		out = append(out, Target{"throughput with a full inbox >= 0.9 x empty", fmt.Sprintf("%.2f x (%.0f vs %.0f/s, %s)", ratio, inbox.Throughput(), on, inbox.Name), ratio >= 0.9})
	}
	if b := r.Backfill; b != nil {
		out = append(out, Target{fmt.Sprintf("worker peak RSS <= 150MB through a %s backfill", shortCount(b.Orders)), mb(b.WorkerPeakRSSKB), b.WorkerPeakRSSKB <= 150*1024})
		if b.BatchSize > 1 {
			out = append(out, Target{fmt.Sprintf("%s backfill in batch mode <= 5 minutes", shortCount(b.Orders)), b.Elapsed.Round(time.Second).String(), b.Elapsed <= 5*time.Minute})
		}
	}
	var batchOn *Result
	for i := range r.Runs {
		if n := r.Runs[i].Name; strings.HasPrefix(n, "batch ") && strings.HasSuffix(n, "guards on") {
			batchOn = &r.Runs[i]
		}
	}
	if batchOn != nil {
		want := batchTarget(r.Broker)
		tp := batchOn.Throughput()
		out = append(out, Target{fmt.Sprintf("end to end, %s >= %.2f x ceiling", batchOn.Name, want),
			fmt.Sprintf("%.2f x (%.0f of %.0f/s)", tp/ceiling, tp, ceiling), tp/ceiling >= want})
	}
	for _, run := range r.Runs {
		if strings.Contains(run.Name, "guards off") {
			continue
		}
		e := run.Effects
		ok := e.WrongCount == 0 && e.CommissionCents == e.WantCents
		out = append(out, Target{"every effect once: " + run.Name, fmt.Sprintf("%d of %d orders wrong", e.WrongCount, e.Orders), ok})
	}
	return out
}

// Met reports whether every target was met.
func (r Report) Met() bool {
	for _, t := range r.Targets() {
		if !t.Met {
			return false
		}
	}
	return true
}

func ms(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func mb(kb int64) string { return fmt.Sprintf("%.0fMB", float64(kb)/1024) }

// perTx is a CPU time per transaction, in microseconds.
func perTx(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fµs", float64(d.Microseconds())/float64(n))
}

// median is the median throughput of the runs whose name starts with
// prefix, and how many there are.
func (r Report) median(prefix string) (float64, int) {
	var tp []float64
	for _, run := range r.runsNamed(prefix) {
		tp = append(tp, run.Throughput())
	}
	if len(tp) == 0 {
		return 0, 0
	}
	sortFloats(tp)
	if len(tp)%2 == 1 {
		return tp[len(tp)/2], len(tp)
	}
	return (tp[len(tp)/2-1] + tp[len(tp)/2]) / 2, len(tp)
}

func medianOf(n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(", medians of %d runs", n)
}
