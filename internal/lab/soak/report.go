package soak

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Report is what one soak did and found.
type Report struct {
	Config Config
	// KafkaInProcess: the soak ran on the in-process Kafka cluster it
	// started (Config.KafkaBrokers was empty).
	KafkaInProcess bool
	Database       string
	// Deliveries is the webhooks delivered: one per order, plus
	// Redelivered (same event id) and SecondEvents (new event id).
	Deliveries, Redelivered, SecondEvents int
	// LoadTime is how long delivering took; Retries counts deliveries the
	// api refused (while it or the database was down) and that were sent
	// again, as a provider does.
	LoadTime time.Duration
	Retries  int64
	Faults   []Fault
	// SettleTime is how long the flow took to settle after the load.
	SettleTime time.Duration
	Executions Executions
	Checks     []Check
}

// Passed reports whether the soak ran and every invariant held.
func (r Report) Passed() bool { return allOK(r.Checks) }

// Print writes the report on one screen.
func (r Report) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "orderpaid-lab soak: %d orders, broker %s, %d workers, database %s\n",
		c.Orders, brokerLabel(c.Broker, c.NATSURL, r.KafkaInProcess), c.Workers, r.Database)
	if c.Without != "" {
		fmt.Fprintf(w, "guards:  OFF: %s (the soak should catch the damage)\n", c.Without)
	}
	fmt.Fprintf(w, "load:   %d webhook deliveries in %s (%d redeliveries of an event, %d second events for a payment), %d refused and retried\n",
		r.Deliveries, r.LoadTime.Round(time.Millisecond), r.Redelivered, r.SecondEvents, r.Retries)
	fmt.Fprintf(w, "faults: %s\n", summary(r.Faults))
	for _, f := range r.Faults {
		if !strings.HasPrefix(f.What, "SIGKILL") && !strings.HasPrefix(f.What, "SIGTERM") || f.Err != nil {
			line := fmt.Sprintf("        %6.1fs  %s", f.At.Seconds(), f.What)
			if f.Err != nil {
				line += ": " + f.Err.Error()
			}
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintf(w, "settled %s after the load; executions: order_paid %d (%.2f per order), order_confirmed %d (%.2f per order)\n\n",
		r.SettleTime.Round(time.Millisecond), r.Executions.OrderPaid, perOrder(r.Executions.OrderPaid, c.Orders),
		r.Executions.OrderConfirmed, perOrder(r.Executions.OrderConfirmed, c.Orders))
	for _, ch := range r.Checks {
		mark := "ok  "
		if !ch.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  [%s] %-50s %s\n", mark, ch.Name, ch.Detail)
	}
	if r.Passed() {
		fmt.Fprintln(w, "\nPASS: every invariant held")
	} else {
		kept := "dropped"
		if c.Keep || c.KeepOnFailure {
			kept = "kept for inspection"
		}
		fmt.Fprintf(w, "\nFAIL: invariants violated; database %s %s, logs in %s\n", r.Database, kept, c.LogDir)
	}
}

// brokerLabel names the broker for a report, and the one the soak started
// for itself: a private nats-server, or the in-process Kafka cluster.
func brokerLabel(broker, natsURL string, kafkaInProcess bool) string {
	switch {
	case broker == "nats" && strings.HasPrefix(natsURL, "nats://127.0.0.1:"):
		return broker + " (private nats-server)"
	case kafkaInProcess:
		return broker + " (in-process cluster, franz-go's kfake)"
	}
	return broker
}

func perOrder(n int64, orders int) float64 {
	if orders == 0 {
		return 0
	}
	return float64(n) / float64(orders)
}
