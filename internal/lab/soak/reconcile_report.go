package soak

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ReconcileReport is what one reconcile soak did and found.
type ReconcileReport struct {
	Config ReconcileConfig
	// KafkaInProcess: the soak ran on the in-process Kafka cluster it
	// started (Config.KafkaBrokers was empty).
	KafkaInProcess bool
	Database       string
	// Orders is the orders created and paid; Payments what their customers
	// saw; LoadTime how long until the last customer was done.
	Orders   int
	Payments Payments
	LoadTime time.Duration
	// Faults is the api SIGKILLs. CutBefore counts the charges the killed
	// apis never got to the gateway, CutAfter those made whose answer found
	// the api gone (both at the slowed gateway's door).
	Faults              []Fault
	CutBefore, CutAfter int64
	// LeaseWait is how long the soak waited after the load for the last
	// attempt's lease; SettleTime how long the flow then took to settle.
	LeaseWait, SettleTime time.Duration
	// Runs is every reconcile run, the final one last.
	Runs   []ReconcileRun
	Facts  ReconcileFacts
	Checks []Check
}

// Passed reports whether the soak ran and every invariant held.
func (r ReconcileReport) Passed() bool { return allOK(r.Checks) }

// Print writes the report on one screen.
func (r ReconcileReport) Print(w io.Writer) {
	c, p, f := r.Config, r.Payments, r.Facts
	fmt.Fprintf(w, "orderpaid-lab soak --reconcile: %d orders, broker %s, %d workers, database %s\n", r.Orders, brokerLabel(c.Broker, c.NATSURL, r.KafkaInProcess), c.Workers, r.Database)
	fmt.Fprintf(w, "load:      %d orders created and paid at %.0f/s, every customer done after %s: %d paid at the first request, "+
		"%d after a retry with the same key (%d waited out a lease), %d gave up after no answer (%d requests refused while the api restarted)\n",
		r.Orders, c.Rate, r.LoadTime.Round(time.Millisecond), p.FirstTry, p.Retried, p.WaitedLease, p.GaveUp, p.Refused)
	failed := 0
	for _, ft := range r.Faults {
		count(&failed, ft.Err != nil)
	}
	fmt.Fprintf(w, "faults:    %d api SIGKILLs (each started again at once), %d failed; the gateway %s away each way; %.0f%% of payment.succeeded dropped\n",
		len(r.Faults), failed, c.GatewayDelay, 100*c.DropWebhooks)
	for _, ft := range r.Faults {
		if ft.Err != nil {
			fmt.Fprintf(w, "           %6.1fs  %s: %v\n", ft.At.Seconds(), ft.What, ft.Err)
		}
	}
	fmt.Fprintf(w, "gaps:      %d charges made; %d never sent (the api died before the call), %d answers cut on the way back; "+
		"%d charges with no answer stored, %d of them with the webhook dropped too (unknown to the service); %d webhooks dropped in all\n",
		f.Charges, r.CutBefore, r.CutAfter, f.AnswersLost, f.Unknown, f.Dropped)
	during, already := 0, 0
	for _, run := range r.Runs {
		count(&during, run.Phase == "load")
		for _, fd := range run.Report.Findings {
			count(&already, strings.HasPrefix(fd.Action, "already settled"))
		}
	}
	fmt.Fprintf(w, "reconcile: %d runs, two at once (%d during the load), --grace %s; settled: charge_completed %d (%d of them raced a late webhook), "+
		"charge_released %d, confirmation_resent %d, refund_recorded %d; %d findings were already settled by the other run\n",
		len(r.Runs), during, c.Grace, f.Actions["charge_completed"], f.Raced, f.Actions["charge_released"],
		f.Actions["confirmation_resent"], f.Actions["refund_recorded"], already)
	fmt.Fprintf(w, "after:     waited %s for the last lease (payment.Config.LockTimeout, 30s), settled %s later\n\n",
		r.LeaseWait.Round(time.Millisecond), r.SettleTime.Round(time.Millisecond))
	for _, ch := range r.Checks {
		mark := "ok  "
		if !ch.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  [%s] %-60s %s\n", mark, ch.Name, ch.Detail)
	}
	if r.Passed() {
		fmt.Fprintln(w, "\nPASS: every invariant held")
		return
	}
	kept := "dropped"
	if c.Keep || c.KeepOnFailure {
		kept = "kept for inspection"
	}
	fmt.Fprintf(w, "\nFAIL: invariants violated; database %s %s, logs in %s\n", r.Database, kept, c.LogDir)
}
