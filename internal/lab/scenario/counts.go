package scenario

import (
	"fmt"
	"strings"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// Counts is what a scenario observed, summed over its orders: how often the
// handlers ran (executions) against what really happened (effects), read
// from the audit endpoint, the database and the fake providers.
type Counts struct {
	Orders int `json:"orders"`
	// ExecOrderPaid and ExecOrderConfirmed count handler runs that finished
	// (the execution log: a run cut short by a crash is not in it).
	ExecOrderPaid      int64 `json:"exec_order_paid"`
	ExecOrderConfirmed int64 `json:"exec_order_confirmed"`
	// Charges are the charges the fake gateway really made (GET /charges).
	Charges int64 `json:"charges"`
	// Paid, Commission, Enqueued and Delivered are the audit's effects:
	// order transitions to paid, commission ledger entries, confirmations
	// written to the outbox, confirmations recorded in the consumer inbox.
	Paid       int64 `json:"paid"`
	Commission int64 `json:"commission"`
	Enqueued   int64 `json:"confirmation_enqueued"`
	Delivered  int64 `json:"confirmation_delivered"`
	// Notified are the e-mails the fake provider really sent
	// (GET /notifications); ProviderCalls how often it was asked to.
	Notified      int64 `json:"notifications"`
	ProviderCalls int64 `json:"provider_calls"`
	// StockReserved is the audit's stock_reserved: how often orders' items
	// really left the stock.
	StockReserved int64 `json:"stock_reserved"`
	// Refunded, StockReleased and Reversed are the audit's refunded,
	// stock_released and commission_reversed; RefundNotices the refund
	// e-mails the fake provider really sent; Refunds the refunds the fake
	// gateway really made (GET /refunds).
	Refunded      int64 `json:"refunded"`
	StockReleased int64 `json:"stock_released"`
	Reversed      int64 `json:"commission_reversed"`
	RefundNotices int64 `json:"refund_notices"`
	Refunds       int64 `json:"refunds"`
	// ExecOrderRefunded counts runs of the order_refunded consumer;
	// ExecRefundRequested those of refund_requested that reached the
	// execution log (a run killed in the middle writes none).
	ExecOrderRefunded   int64 `json:"exec_order_refunded"`
	ExecRefundRequested int64 `json:"exec_refund_requested"`
	// ExecRefundConfirmed counts runs of refund_confirmed (the refund
	// notice's consumer) that finished.
	ExecRefundConfirmed int64 `json:"exec_refund_confirmed"`
	// RefundFailed is the audit's refund_failed: orders moved to
	// refund_failed, their refund refused for good; Refusals the refunds the
	// fake gateway refused for good (GET /refund-refusals), each a call that
	// reached it; Poisoned the poison queue's pending messages of the orders.
	RefundFailed int64 `json:"refund_failed"`
	Refusals     int64 `json:"refund_refusals"`
	Poisoned     int64 `json:"poisoned"`
	// Recorded is the audit's charges: the charges on the service's own
	// record (Charges are the gateway's); Reconciled what orderpaid
	// reconcile settled for the orders (the audit's reconciled).
	Recorded   int64 `json:"charges_recorded"`
	Reconciled int64 `json:"reconciled"`
	// Accepted are the payment events the webhook accepted: the order_paid
	// messages it wrote to the outbox, one per distinct event however
	// often the gateway delivered it (the webhook inbox's effect).
	Accepted int64 `json:"payment_events_accepted"`
	// DoneOrderConfirmed and DoneRefundConfirmed are the runs of
	// order_confirmed and refund_confirmed that ended without an error (the
	// Exec counts hold the failed ones too): the e-mail's consumer is done.
	DoneOrderConfirmed  int64 `json:"done_order_confirmed"`
	DoneRefundConfirmed int64 `json:"done_refund_confirmed"`
	// RecordsCommitted and RecordsWritten are the records of a Kafka
	// transactional loop's output topic (kafka-exactly-once-is-not-enough):
	// those a read_committed reader sees, and all written, those of aborted
	// transactions included.
	RecordsCommitted int64 `json:"kafka_records_committed"`
	RecordsWritten   int64 `json:"kafka_records_written"`
}

// Metric names one number of Counts in a Check.
type Metric string

// Metrics.
const (
	ExecOrderPaid      Metric = "executions.order_paid"
	ExecOrderConfirmed Metric = "executions.order_confirmed"
	Charges            Metric = "charges"
	Paid               Metric = effect.Paid
	Commission         Metric = effect.Commission
	Enqueued           Metric = effect.ConfirmationEnqueued
	Delivered          Metric = effect.ConfirmationDelivered
	Notified           Metric = "notifications"
	ProviderCalls      Metric = "provider_calls"
	StockReserved      Metric = effect.StockReserved
	Refunded           Metric = effect.Refunded
	StockReleased      Metric = effect.StockReleased
	Reversed           Metric = effect.CommissionReversed
	RefundNotices      Metric = "refund_notices"
	Refunds            Metric = "refunds"
	ExecOrderRefunded  Metric = "executions.order_refunded"
	// ExecRefundRequested counts runs of refund_requested.
	ExecRefundRequested Metric = "executions.refund_requested"
	// ExecRefundConfirmed counts runs of refund_confirmed.
	ExecRefundConfirmed Metric = "executions.refund_confirmed"
	RefundFailed        Metric = effect.RefundFailed
	Refusals            Metric = "refund_refusals"
	Poisoned            Metric = "poisoned"
	Recorded            Metric = "charges_recorded"
	Reconciled          Metric = "reconciled"
	Accepted            Metric = effect.PaymentEventAccepted
	RecordsCommitted    Metric = "kafka.records_committed"
	RecordsWritten      Metric = "kafka.records_written"
)

// Of returns the value of m in c.
func (m Metric) Of(c Counts) int64 {
	switch m {
	case ExecOrderPaid:
		return c.ExecOrderPaid
	case ExecOrderConfirmed:
		return c.ExecOrderConfirmed
	case Charges:
		return c.Charges
	case Paid:
		return c.Paid
	case Commission:
		return c.Commission
	case Enqueued:
		return c.Enqueued
	case Delivered:
		return c.Delivered
	case Notified:
		return c.Notified
	case ProviderCalls:
		return c.ProviderCalls
	case StockReserved:
		return c.StockReserved
	case Refunded:
		return c.Refunded
	case StockReleased:
		return c.StockReleased
	case Reversed:
		return c.Reversed
	case RefundNotices:
		return c.RefundNotices
	case Refunds:
		return c.Refunds
	case ExecOrderRefunded:
		return c.ExecOrderRefunded
	case ExecRefundConfirmed:
		return c.ExecRefundConfirmed
	case ExecRefundRequested:
		return c.ExecRefundRequested
	case RefundFailed:
		return c.RefundFailed
	case Refusals:
		return c.Refusals
	case Poisoned:
		return c.Poisoned
	case Recorded:
		return c.Recorded
	case Reconciled:
		return c.Reconciled
	case Accepted:
		return c.Accepted
	case RecordsCommitted:
		return c.RecordsCommitted
	case RecordsWritten:
		return c.RecordsWritten
	}
	panic("scenario: unknown metric " + string(m))
}

// Check is one expected count: Min <= value <= Max.
type Check struct {
	Metric   Metric
	Min, Max int64
}

func (c Check) String() string { return string(c.Metric) + c.want() }

// want is the expected value as written after the metric: "=1", ">=2", "=1..3".
func (c Check) want() string {
	switch {
	case c.Min == c.Max:
		return fmt.Sprintf("=%d", c.Min)
	case c.Max < 0:
		return fmt.Sprintf(">=%d", c.Min)
	default:
		return fmt.Sprintf("=%d..%d", c.Min, c.Max)
	}
}

func (c Check) holds(v int64) bool { return v >= c.Min && (c.Max < 0 || v <= c.Max) }

// eq expects exactly n; atLeast expects n or more.
func eq(m Metric, n int) Check      { return Check{Metric: m, Min: int64(n), Max: int64(n)} }
func atLeast(m Metric, n int) Check { return Check{Metric: m, Min: int64(n), Max: -1} }

// once expects every effect of n paid orders exactly n times: one charge,
// one transition, one commission, one confirmation enqueued and delivered,
// one e-mail per order. extra checks replace those on the same metric.
// Once is the checks of n orders whose every effect happened once: n
// charges, orders paid, commissions, confirmations written and delivered,
// e-mails. The crash matrix holds every cell to it.
func Once(n int) []Check { return once(n) }

func once(n int, extra ...Check) []Check {
	base := []Check{
		eq(Charges, n), eq(Paid, n), eq(Commission, n),
		eq(Enqueued, n), eq(Delivered, n), eq(Notified, n),
	}
	return with(base, extra...)
}

// with returns checks with extra replacing the checks on the same metric.
func with(checks []Check, extra ...Check) []Check {
	out := make([]Check, 0, len(checks)+len(extra))
	for _, c := range checks {
		replaced := false
		for _, e := range extra {
			replaced = replaced || e.Metric == c.Metric
		}
		if !replaced {
			out = append(out, c)
		}
	}
	return append(out, extra...)
}

// Failed returns the checks that c does not satisfy, in words.
func (e Expect) Failed(c Counts) []string { return e.failed(c) }

// failed returns the checks that c does not satisfy, in words.
func (e Expect) failed(c Counts) []string {
	var bad []string
	for _, ch := range e.Checks {
		if v := ch.Metric.Of(c); !ch.holds(v) {
			bad = append(bad, fmt.Sprintf("%s=%d (want %s)", ch.Metric, v, strings.TrimPrefix(ch.want(), "=")))
		}
	}
	return bad
}
