package scenario

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints one row per result: scenario, guard off, what repeated,
// executions, each effect, verdict. Counts are totals over the scenario's
// orders (the ORDERS column). When any result touched stock or refunds, the
// columns of those effects come before the verdict: STOCK reserved/released,
// REFUNDS made at the gateway, REFUNDED (transitions), REVERSED
// (commission reversals), REFUND E-MAILS; and when any result had a refund
// refused for good, after them: REFUSED (refunds the gateway refused),
// REFUND FAILED (orders moved to refund_failed), POISONED (messages of the
// orders waiting in the poison queue); and when orderpaid reconcile settled
// anything: RECORDED (the charges on the service's record, the audit's
// charges) and RECONCILED (what reconcile settled); and when a Kafka
// transactional loop ran, last: KAFKA RECORDS committed/written (its output
// records a read_committed reader sees, and all written).
func WriteTable(w io.Writer, results []Result) error {
	wide, refused, reconciled, records := false, false, false, false
	for _, r := range results {
		c := r.Counts
		if c.StockReserved+c.StockReleased+c.Refunds+c.Refunded+c.Reversed+c.RefundNotices > 0 {
			wide = true
		}
		if c.Refusals+c.RefundFailed > 0 {
			refused = true
		}
		if c.Reconciled > 0 {
			reconciled = true
		}
		if c.RecordsWritten > 0 {
			records = true
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "SCENARIO\tGUARD OFF\tWHAT REPEATED\tORDERS\tEXEC paid/conf\tCHARGES\tPAID\tCOMMISSION\tCONF QUEUED\tCONF DONE\tE-MAILS\tPROVIDER CALLS"
	if wide {
		header += "\tSTOCK res/rel\tREFUNDS\tREFUNDED\tREVERSED\tREFUND E-MAILS"
	}
	if refused {
		header += "\tREFUSED\tREFUND FAILED\tPOISONED"
	}
	if reconciled {
		header += "\tRECORDED\tRECONCILED"
	}
	if records {
		header += "\tKAFKA RECORDS committed/written"
	}
	fmt.Fprintln(tw, header+"\tVERDICT")
	for _, r := range results {
		c := r.Counts
		off := r.Without
		if off == "" {
			off = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d/%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t",
			r.Scenario, off, r.Repeated, c.Orders, c.ExecOrderPaid, c.ExecOrderConfirmed,
			c.Charges, c.Paid, c.Commission, c.Enqueued, c.Delivered, c.Notified, c.ProviderCalls)
		if wide {
			fmt.Fprintf(tw, "%d/%d\t%d\t%d\t%d\t%d\t", c.StockReserved, c.StockReleased, c.Refunds, c.Refunded, c.Reversed, c.RefundNotices)
		}
		if refused {
			fmt.Fprintf(tw, "%d\t%d\t%d\t", c.Refusals, c.RefundFailed, c.Poisoned)
		}
		if reconciled {
			fmt.Fprintf(tw, "%d\t%d\t", c.Recorded, c.Reconciled)
		}
		if records {
			fmt.Fprintf(tw, "%d/%d\t", c.RecordsCommitted, c.RecordsWritten)
		}
		fmt.Fprintf(tw, "%s\n", r.Verdict())
	}
	return tw.Flush()
}

// WriteAudits prints, for each result that has them, its orders' audits
// (Result.Audits) under a line naming the run.
func WriteAudits(w io.Writer, results []Result) error {
	for _, r := range results {
		if len(r.Audits) == 0 {
			continue
		}
		run := label(Case{Scenario: &Scenario{Name: r.Scenario}, Without: r.Without})
		if _, err := fmt.Fprintf(w, "\nGET /orders/{id}/audit, %s:\n%s\n", run, strings.Join(r.Audits, "\n")); err != nil {
			return err
		}
	}
	return nil
}

// Summary is the closing line: how many results matched their expectation.
func Summary(results []Result) string {
	ok := 0
	var bad []string
	for _, r := range results {
		if r.OK() {
			ok++
		} else {
			bad = append(bad, label(Case{Scenario: &Scenario{Name: r.Scenario}, Without: r.Without}))
		}
	}
	if len(bad) == 0 {
		return fmt.Sprintf("%d of %d scenario runs showed what they expected", ok, len(results))
	}
	return fmt.Sprintf("%d of %d scenario runs showed what they expected; not: %s", ok, len(results), strings.Join(bad, "; "))
}
