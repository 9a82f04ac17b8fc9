package reconcile

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/google/uuid"
)

// Kind names what the two records disagree on.
type Kind string

// The kinds of finding. Those with a way to settle them are settled (not in
// a dry run); the others are for a person.
const (
	// ChargeNotApplied: the gateway charged the order, which is still
	// pending (the api died before storing the answer and the webhook never
	// came). Settled by accepting the charge.
	ChargeNotApplied Kind = "charge_not_applied"
	// ChargeStuck: an attempt charging past its lease, unknown to the
	// gateway. Settled by giving the attempt back.
	ChargeStuck Kind = "charge_stuck"
	// ChargedTwice: the gateway holds two charges of one order. For a person.
	ChargedTwice Kind = "charged_twice"
	// ChargeUnknown: the service recorded a charge the gateway does not
	// hold. For a person.
	ChargeUnknown Kind = "charge_unknown"
	// RefundNotApplied: the gateway refunded the order, which is not
	// refunded here. Settled by accepting the refund.
	RefundNotApplied Kind = "refund_not_applied"
	// RefundFailed: the gateway refused the order's refund for good. For a
	// person, until the gateway holds the refund.
	RefundFailed Kind = "refund_failed"
	// NotificationMissing: a paid order whose e-mail the provider does not
	// hold. Settled by sending order_confirmed again, unless the service
	// recorded the e-mail as sent.
	NotificationMissing Kind = "notification_missing"
)

// A Finding is one discrepancy between the service's record of an order and
// the providers'.
type Finding struct {
	OrderID uuid.UUID `json:"order_id"`
	Kind    Kind      `json:"kind"`
	Detail  string    `json:"detail"`
	// Action is what reconcile did; empty when it did nothing (a dry run, or
	// a finding for a person).
	Action  string `json:"action,omitempty"`
	Settled bool   `json:"settled"`
	// Waiting: settled, but the worker has not applied yet the message the
	// settlement handed it (waiting.go).
	Waiting bool `json:"waiting"`
	settle  settleFunc
}

// Settleable reports whether reconcile can settle f.
func (f Finding) Settleable() bool { return f.settle != nil }

// Report is what a run found.
type Report struct {
	Orders   int       `json:"orders"` // orders held against the providers
	DryRun   bool      `json:"dry_run"`
	Findings []Finding `json:"findings"`
}

// Left counts the findings not settled: what is left for another run (a dry
// run's) or for a person.
func (r Report) Left() int {
	n := 0
	for _, f := range r.Findings {
		if !f.Settled {
			n++
		}
	}
	return n
}

// Waiting counts the settled findings the worker has not applied yet: the
// run is not done until a later run finds them applied.
func (r Report) Waiting() int {
	n := 0
	for _, f := range r.Findings {
		if f.Waiting {
			n++
		}
	}
	return n
}

// The exit statuses of orderpaid reconcile, which a cron job reads.
const (
	// ExitDone: nothing left for a person, nothing waiting for the worker.
	ExitDone = 0
	// ExitLeft: a finding is left for a person, or a dry run found one (or
	// the run failed: its message says so).
	ExitLeft = 1
	// ExitUsage: a mistake on the command line.
	ExitUsage = 2
	// ExitWaiting: every finding is settled, but the worker has not yet
	// applied what some settlements handed it: run again later.
	ExitWaiting = 3
)

// ExitStatus is the exit status of a run that produced r: a finding left
// first, then a settlement waiting, then done.
func (r Report) ExitStatus() int {
	switch {
	case r.Left() > 0:
		return ExitLeft
	case r.Waiting() > 0:
		return ExitWaiting
	}
	return ExitDone
}

// WriteTable prints one line per finding and a summary: one line of counts,
// and one more while settlements wait for the worker.
func (r Report) WriteTable(w io.Writer) error {
	if len(r.Findings) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ORDER\tFINDING\tSETTLED\tDETAIL")
		for _, f := range r.Findings {
			settled := "no: for a person"
			switch {
			case f.Settled:
				settled = f.Action
			case f.Settleable():
				settled = "no: dry run"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.OrderID, f.Kind, settled, f.Detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(w, "%d order(s) held against the providers: %d finding(s), %d settled, %d left\n",
		r.Orders, len(r.Findings), len(r.Findings)-r.Left(), r.Left()); err != nil {
		return err
	}
	if n := r.Waiting(); n > 0 {
		if _, err := fmt.Fprintf(w, "not done: %d settled finding(s) wait for the worker (handed over through the outbox, not applied yet): run again later\n", n); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON prints the report as one JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Report
		Settled int `json:"settled"`
		Left    int `json:"left"`
		Waiting int `json:"waiting"`
	}{r, len(r.Findings) - r.Left(), r.Left(), r.Waiting()})
}
