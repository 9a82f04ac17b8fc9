package crashmatrix

import (
	"time"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
)

// Providers is how the outside world behaves around the crash, where that
// changes the outcome. The zero value: providers that remember their keys,
// a webhook on time.
type Providers struct {
	// Forget: the gateway and the notification provider forget their
	// idempotency keys once the process has died (real ones do after about
	// a day), so a call re-sent under its key is a new call.
	Forget bool
	// LateWebhook: the payment's webhook is held by the gateway until the
	// client's retries have their answers.
	LateWebhook bool
	// TwoEvents: once the flow has recovered, the gateway sends the
	// payment's event again under a new event id, as providers that send
	// two events for one payment do: a second order_paid message, with a
	// message id of its own, for the same business fact.
	TwoEvents bool
	// SearchLag: the providers' search (GET /charges?order_id=, GET
	// /notifications?order_id=) has not caught up with anything made in the
	// cell, so a look-up after the crash finds nothing; their keys have,
	// and only the key keeps a call re-sent then from being a second one.
	// Keys forgotten as well (Forget) leave nothing to keep it: the two
	// are not run together.
	SearchLag bool
	// LateRetry: a client without an answer comes back only once the
	// payment's webhook has paid the order (a person who reloads the page
	// later), so only the webhook tells the service of a charge whose
	// answer died with the api. Not with LateWebhook.
	LateRetry bool
	// NoWebhook: the gateway never sends the payment's webhook (the api's
	// endpoint unreachable for longer than the provider retries, a secret
	// rotated on one side only). Nothing then tells the service of the
	// charge but the gateway's record: once the cell has recovered, an
	// operator runs orderpaid reconcile once, which accepts the payment's
	// event as its webhook would have been (Reconciled). The webhook's own
	// cells and the refund's are not run (Applies). Not with LateWebhook or
	// LateRetry.
	NoWebhook bool
}

// searchLag is the providers' search lag with SearchLag: longer than any
// cell.
const searchLag = 10 * time.Minute

func (p Providers) String() string {
	keys, webhook := "remember their keys", "webhook on time"
	if p.Forget {
		keys = "forget their keys"
	}
	if p.LateWebhook {
		webhook = "webhook late"
	}
	if p.TwoEvents {
		webhook += ", sent twice under two event ids"
	}
	if p.SearchLag {
		keys += ", their search behind"
	}
	if p.LateRetry {
		webhook += ", the client back after it"
	}
	if p.NoWebhook {
		webhook = "webhook never sent, reconcile run once"
	}
	return "providers " + keys + ", " + webhook
}

// Flags is p as crashmatrix flags ("" for the zero value).
func (p Providers) Flags() string {
	var f string
	for _, c := range []struct {
		on   bool
		flag string
	}{{p.Forget, "--forget-keys"}, {p.LateWebhook, "--late-webhook"}, {p.TwoEvents, "--two-events"},
		{p.SearchLag, "--search-lag"}, {p.LateRetry, "--late-retry"}, {p.NoWebhook, "--webhook-never"}} {
		if c.on {
			f += " " + c.flag
		}
	}
	return f
}

// SKU is the item of every cell's order: one unit of it, out of 10.
const SKU = "sku-crash"

// Checks are what every cell is held to, the effects: one charge, on the
// service's record too (a charge the service does not know of cannot be
// refunded), one payment event accepted per event the gateway sent (two
// with TwoEvents), one order paid, one commission, one confirmation
// delivered, one e-mail, and the item taken out of stock once. The
// outbox's rows are not an effect (with the outbox off there are none, by
// design): what the outbox protects shows in the confirmation delivered
// and the e-mail.
func Checks(p Providers) []scenario.Check { return checks(p, false) }

// checks are Checks, and with refund the refund's effects as well (refundChecks).
func checks(p Providers, refund bool) []scenario.Check {
	var out []scenario.Check
	for _, c := range scenario.Once(1) {
		if c.Metric != scenario.Enqueued {
			out = append(out, c)
		}
	}
	events := int64(1)
	if p.TwoEvents && !refund {
		events = 2
	}
	out = append(out,
		scenario.Check{Metric: scenario.StockReserved, Min: 1, Max: 1},
		scenario.Check{Metric: scenario.Recorded, Min: 1, Max: 1},
		scenario.Check{Metric: scenario.Accepted, Min: events, Max: events})
	if refund {
		out = append(out, refundChecks()...)
	}
	return out
}

// Damage is what a cell's counts show beyond each effect once, in words
// ("charges=2 (want 1)"); none when the cell held.
func Damage(r scenario.Result, p Providers, refund bool) []string {
	if r.Err != nil {
		return []string{firstLine(r.Err.Error())}
	}
	return scenario.Expect{Checks: checks(p, refund)}.Failed(r.Counts)
}

// Beneath names the guards that are a second layer under another: with
// the other on, nothing reaches them twice, so switching them off alone
// damages nothing, by design. The inbox answers a redelivered confirmation
// before the e-mail's claim is asked, and the claim answers it as well.
// Their damage shows with the guard above switched off too, in the cells
// that the guard above alone, switched off, did not damage.
var Beneath = map[string]string{effect.GuardInbox: effect.GuardNotificationClaim}

// GuardProviders is the providers a guard is switched off under, where
// they differ from the matrix's own p: the world in which the guard is the
// last thing standing.
//
//   - The provider's key is the provider's memory: where the providers
//     forget their keys, switching it off changes nothing. It is switched
//     off where they remember their keys and their search lags instead.
//   - The charge record is how the payment's webhook tells the service of
//     a charge whose answer died with the api: where the client retries
//     first (a late webhook), the retry asks the gateway and records the
//     charge itself. It is switched off where the client comes back only
//     after the webhook (LateRetry).
func GuardProviders(guard string, p Providers) Providers {
	switch guard {
	case effect.GuardProviderKey:
		if p.Forget {
			p.Forget, p.SearchLag = false, true
		}
	case effect.GuardChargeRecord:
		p.LateWebhook, p.LateRetry = false, true
	}
	return p
}

// Applies says whether cell c can run in p's world. With NoWebhook the
// payment's webhook is never delivered, so its cells are never met; and the
// refund's flows, which begin once the payment has run its course, are
// left to the worlds with a webhook.
func (p Providers) Applies(c Cell) bool {
	return !p.NoWebhook || c.Flow() != "webhook" && !c.Refunds()
}
