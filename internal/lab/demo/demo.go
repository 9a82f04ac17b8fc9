// Package demo walks one order through a running api and fakes
// (`orderpaid-lab all`) and narrates what each guard answered: `orderpaid-lab
// demo`, which `make demo` runs.
package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// Walk is one walk of an order through the API at API, whose providers
// are the fakes at Fakes, told on Out.
type Walk struct {
	API, Fakes string
	Out        io.Writer
	HTTP       *http.Client
	silent     bool // polling: do not print each request
	// SettleTimeout bounds each wait for the worker; Quiet is how long the
	// audit must stay unchanged to count as settled.
	SettleTimeout, Quiet time.Duration
}

// Run walks one order through and tells what each guard answered; it fails
// when an effect happened other than once with its guard on.
func (d Walk) Run() error {
	off, known := d.guardsOff()
	if len(off) > 0 {
		d.say("The server runs with guards switched off: %s. Effects may happen more than once; the end of this", strings.Join(off, ", "))
		d.say("demo says which did.\n")
	}
	d.say("1. Stock 10 mugs (PUT sets the count: sending it again changes nothing), and create an order of 2")
	d.say("   (customer c1, affiliate a1, R$ 100.00).")
	if _, err := d.do("PUT", d.API+"/stock/"+demoSKU, nil, `{"available":10}`, nil); err != nil {
		return err
	}
	var o struct{ ID string }
	if _, err := d.do("POST", d.API+"/orders", nil, `{"customer_id":"c1","affiliate_id":"a1","amount_cents":10000,"currency":"BRL",`+
		`"items":[{"sku":"`+demoSKU+`","quantity":2}]}`, &o); err != nil {
		return err
	}
	key := map[string]string{"Idempotency-Key": "demo-" + o.ID}
	d.say("2. Pay it, with Idempotency-Key %s. The gateway charges and sends a signed webhook.", key["Idempotency-Key"])
	if _, err := d.do("POST", d.API+"/orders/"+o.ID+"/payments", key, `{}`, nil); err != nil {
		return err
	}
	d.say("3. The client times out and retries with the same key: the stored response comes back.")
	h, err := d.do("POST", d.API+"/orders/"+o.ID+"/payments", key, `{}`, nil)
	if err != nil {
		return err
	}
	if h.Get("Idempotency-Replayed") == "true" {
		d.say("   Idempotency-Replayed: true")
	} else {
		d.say("   no Idempotency-Replayed header: the retry was not answered from the stored response, it was handled again.")
	}
	d.say("4. Wait for the worker: order paid, 2 mugs reserved, commission released, confirmation sent.")
	if _, err := d.waitAudit(o.ID, 1); err != nil {
		return err
	}
	var charges []struct {
		ID      string `json:"id"`
		OrderID string `json:"order_id"`
	}
	if _, err := d.do("GET", d.Fakes+"/charges", nil, "", &charges); err != nil {
		return fmt.Errorf("read the gateway's charges: %w", err)
	}
	chargeID := ""
	for _, c := range charges {
		if c.OrderID == o.ID {
			chargeID = c.ID
		}
	}
	if chargeID == "" {
		return fmt.Errorf("the gateway at %s made no charge for order %s (is --fakes the fakes this API calls? FAKES_URL)", d.Fakes, o.ID)
	}
	d.say("5. The provider repeats itself: the same webhook 3 times at once, then a second event for the same payment.")
	if _, err := d.do("POST", d.Fakes+"/charges/"+chargeID+"/redeliver", nil, `{"count":3,"concurrent":true}`, nil); err != nil {
		return err
	}
	if _, err := d.do("POST", d.Fakes+"/charges/"+chargeID+"/redeliver", nil, `{"count":1,"new_event_id":true}`, nil); err != nil {
		return err
	}
	a, err := d.waitAudit(o.ID, 2)
	if err != nil {
		return err
	}
	var stock struct{ Available int64 }
	if _, err := d.do("GET", d.API+"/stock/"+demoSKU, nil, "", &stock); err != nil {
		return err
	}
	reportErr := d.report(a, stock.Available, off, known)
	d.say("Try it yourself:\n  curl -s %s/orders/%s/audit\n  curl -s %s/stock/%s\n  curl -s %s/charges\n  curl -s %s/notifications",
		d.API, o.ID, d.API, demoSKU, d.Fakes, d.Fakes)
	return reportErr
}

// demoSKU is the SKU the demo's order takes; demoStock and demoQuantity are
// what it stocks and what the order takes.
const (
	demoSKU      = "demo-mug"
	demoStock    = 10
	demoQuantity = 2
)

// wantOnce are the effects the demo's order must have exactly once; every
// other effect of the audit (stock_released, refunded, ...) it must not have.
var wantOnce = []string{effect.Charges, effect.Paid, effect.StockReserved, effect.Commission,
	effect.ConfirmationEnqueued, effect.ConfirmationDelivered, effect.NotificationSent}

// keptOnceBy names, for each effect, the guards that keep it at 1 in the
// demo's repeats (a retried payment, redelivered and repeated webhooks):
// the names --without takes. A charge is made twice only with both of its
// guards off: the retry reuses its key.
var keptOnceBy = map[string][]string{
	effect.Charges:               {effect.GuardChargeClaim, effect.GuardIdempotencyKey},
	effect.Paid:                  {effect.GuardStateCheck},
	effect.StockReserved:         {effect.GuardStockReservation},
	effect.Commission:            {effect.GuardLedgerKey},
	effect.ConfirmationEnqueued:  {effect.GuardStateCheck, effect.GuardOutbox},
	effect.ConfirmationDelivered: {effect.GuardInbox},
	effect.NotificationSent:      {effect.GuardProviderKey, effect.GuardInbox},
}

// report says what really happened to the order: every effect once, or
// which were not, and the guards that were off for them. It returns an error
// when an effect is wrong and no guard known to be off explains it.
func (d Walk) report(a Audit, available int64, off []string, known bool) error {
	var wrong []string
	unexplained := 0
	for _, name := range slices.Sorted(maps.Keys(a.Effects)) {
		want := int64(0)
		if slices.Contains(wantOnce, name) {
			want = 1
		}
		got := a.Effects[name]
		if got == want {
			continue
		}
		line, explained := explainEffect(name, got, want, off, known)
		if !explained {
			unexplained++
		}
		wrong = append(wrong, line)
	}
	left := fmt.Sprintf("%d mugs are left", available)
	if available != demoStock-demoQuantity {
		left += fmt.Sprintf(", not %d", demoStock-demoQuantity)
	}
	if len(wrong) == 0 {
		d.say("\nExecutions grew (order_paid ran %d times); every effect stayed at 1 (stock_released is 0: nothing gave the",
			a.Executions["order_paid"])
		d.say("mugs back), and %s. Each guard answered \"already_applied\".", left)
		if len(off) > 0 {
			d.say("The guards switched off (%s) did no damage here: the guards after them absorbed the repeats.", strings.Join(off, ", "))
		}
		return nil
	}
	d.say("\nExecutions grew (order_paid ran %d times), and these effects are not what they should be (%s):", a.Executions["order_paid"], left)
	for _, l := range wrong {
		d.say("   %s", l)
	}
	if unexplained > 0 {
		return fmt.Errorf("demo: %d effects of order %s are not what they should be and no guard known to be off explains it (see above)",
			unexplained, a.OrderID)
	}
	d.say("That is the damage the guards switched off let through; restart the server without --without to see each stay at 1.")
	return nil
}

// explainEffect is the report's line for one effect whose count is not
// want, and whether a guard known to be off explains it.
func explainEffect(name string, got, want int64, off []string, known bool) (string, bool) {
	line := fmt.Sprintf("%s %d (want %d)", name, got, want)
	guards := keptOnceBy[name]
	var offHere []string
	for _, g := range guards {
		if slices.Contains(off, g) {
			offHere = append(offHere, g)
		}
	}
	switch {
	case len(offHere) > 0:
		is := "the " + offHere[0] + " guard is off"
		if len(offHere) > 1 {
			is = "the " + strings.Join(offHere, " and ") + " guards are off"
		}
		if got < want {
			is += ": what it writes is not there to count"
		}
		return line + ": " + is, true
	case got < want && len(off) > 0:
		return line + ": with " + strings.Join(off, ", ") + " off, it did not happen", true
	case !known && len(guards) > 0:
		return fmt.Sprintf("%s: is the server running with --without %s? (this API does not say which guards are off)",
			line, strings.Join(guards, ",")), false
	case len(guards) > 0:
		return fmt.Sprintf("%s, with %s on: a bug; the logs of the server say more", line, strings.Join(guards, " and ")), false
	}
	return line, false
}

// guardsOff asks the API's lab endpoint (GET /lab/state, served by a dev
// run) which guards are off, and reports whether it could tell. With api and
// worker in separate processes it knows the api's levers only; the demo then
// still names the guards that keep each effect at 1.
func (d Walk) guardsOff() (off []string, known bool) {
	var st struct {
		Guards []struct {
			Name string `json:"name"`
			Off  bool   `json:"off"`
		} `json:"guards"`
	}
	q := d
	q.silent = true
	if _, err := q.do("GET", d.API+"/lab/state", nil, "", &st); err != nil || len(st.Guards) == 0 {
		return nil, false
	}
	for _, g := range st.Guards {
		if g.Off {
			off = append(off, g.Name)
		}
	}
	return off, true
}

// waitAudit polls the audit until the flow has gone through (order_paid ran
// at least minRuns times, the order is paid, its mugs reserved and the
// e-mail sent) and then stays unchanged for d.Quiet: with a guard off, more
// effects may follow the first ones. It prints the audit it settled on. When
// the flow does not get there in time, the error says what is missing.
func (d Walk) waitAudit(id string, minRuns int64) (Audit, error) {
	var a, last Audit
	q := d
	q.silent = true
	through := false
	stable := time.Now()
	for deadline := time.Now().Add(d.SettleTimeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, err := q.do("GET", d.API+"/orders/"+id+"/audit", nil, "", &a); err != nil {
			return a, err
		}
		if !a.sameCounts(last) {
			last, stable = a, time.Now()
		}
		through = a.wentThrough(minRuns)
		if through && time.Since(stable) >= d.Quiet {
			b, _ := json.MarshalIndent(a, "   ", "  ")
			d.say("   GET /orders/%s/audit\n   %s", id, b)
			return a, nil
		}
	}
	if through {
		d.say("   the audit kept changing for %s; the last one: %s", d.SettleTimeout, a.counts())
		return a, nil
	}
	return a, a.stuck(minRuns, d.SettleTimeout)
}

// Audit is the API's GET /orders/{id}/audit.
type Audit struct {
	OrderID    string           `json:"order_id"`
	Executions map[string]int64 `json:"executions"`
	Effects    map[string]int64 `json:"effects"`
}

// Settled reports whether the five effects of the flow each happened once
// and order_paid ran at least minRuns times (the cmd tests' check).
func (a Audit) Settled(minRuns int64) bool {
	for _, k := range []string{effect.Paid, effect.Commission, effect.ConfirmationEnqueued, effect.ConfirmationDelivered, effect.NotificationSent} {
		if a.Effects[k] != 1 {
			return false
		}
	}
	return a.Executions["order_paid"] >= minRuns
}

// wentThrough reports whether the demo's order got to the end of the flow,
// however many times each effect happened on the way.
func (a Audit) wentThrough(minRuns int64) bool {
	return a.Executions["order_paid"] >= minRuns && a.Effects[effect.Paid] >= 1 &&
		a.Effects[effect.StockReserved] >= 1 && a.Effects[effect.NotificationSent] >= 1
}

// counts is the audit on one line, for an error.
func (a Audit) counts() string {
	return fmt.Sprintf("executions=%v effects=%v", a.Executions, a.Effects)
}

func (a Audit) sameCounts(b Audit) bool {
	return maps.Equal(a.Executions, b.Executions) && maps.Equal(a.Effects, b.Effects)
}

// stuck says where the flow stopped, from the audit: no order_paid run at
// all points at the worker; a run without the effects at the poison queue.
func (a Audit) stuck(minRuns int64, waited time.Duration) error {
	runs := a.Executions["order_paid"]
	var missing []string
	for _, k := range []string{effect.Paid, effect.StockReserved, effect.NotificationSent} {
		if a.Effects[k] == 0 {
			missing = append(missing, k)
		}
	}
	switch {
	case runs == 0:
		return fmt.Errorf("no order_paid ran within %s: is a worker running against this API's database and broker (`orderpaid-lab all` runs one)? last audit: %s", waited, a.counts())
	case runs < minRuns:
		return fmt.Errorf("order_paid ran %d times within %s, want %d: the repeated webhooks did not reach the worker (see the server's log); last audit: %s",
			runs, waited, minRuns, a.counts())
	}
	return fmt.Errorf("order_paid ran %d times, but within %s these effects never happened: %s; a failed handler sends its message to the poison queue "+
		"(orderpaid reprocess --poison, and the server's log say why); last audit: %s", runs, waited, strings.Join(missing, ", "), a.counts())
}

func (d Walk) do(method, url string, headers map[string]string, body string, out any) (http.Header, error) {
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := d.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s (is `orderpaid-lab all` running?): %w", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if !d.silent {
		d.say("   %s %s -> %d %s", method, url, resp.StatusCode, oneLine(raw))
	}
	if resp.StatusCode >= 300 {
		return nil, errors.New("unexpected status " + resp.Status)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("decode %s %s: %w", method, url, err)
		}
	}
	return resp.Header, nil
}

func (d Walk) say(format string, args ...any) { fmt.Fprintf(d.Out, format+"\n", args...) }

func oneLine(b []byte) string {
	const max = 160
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		c.Reset()
		c.Write(bytes.TrimSpace(b))
	}
	if c.Len() > max {
		return c.String()[:max] + "..."
	}
	return c.String()
}
