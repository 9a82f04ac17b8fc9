package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// runDemo walks one order through a running api + fakes (`orderpaid all`)
// and narrates what each guard did. scripts/demo.sh starts the server and
// calls it.
func runDemo(e env) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	api := fs.String("api", "http://localhost:8080", "base URL of the API")
	fakesURL := fs.String("fakes", "http://localhost:8081", "base URL of the fake providers")
	if err := parseFlags(fs, e, "[--api URL] [--fakes URL]"); err != nil {
		return helpOK(err)
	}
	d := demo{api: *api, fakes: *fakesURL, out: e.stdout, http: &http.Client{Timeout: 10 * time.Second}}
	return d.run()
}

type demo struct {
	api, fakes string
	out        io.Writer
	http       *http.Client
	quiet      bool // polling: do not print each request
}

func (d demo) run() error {
	d.say("1. Stock 10 mugs (PUT sets the count: sending it again changes nothing), and create an order of 2")
	d.say("   (customer c1, affiliate a1, R$ 100.00).")
	if _, err := d.do("PUT", d.api+"/stock/"+demoSKU, nil, `{"available":10}`, nil); err != nil {
		return err
	}
	var o struct{ ID string }
	if _, err := d.do("POST", d.api+"/orders", nil, `{"customer_id":"c1","affiliate_id":"a1","amount_cents":10000,"currency":"BRL",`+
		`"items":[{"sku":"`+demoSKU+`","quantity":2}]}`, &o); err != nil {
		return err
	}
	key := map[string]string{"Idempotency-Key": "demo-" + o.ID}
	d.say("2. Pay it, with Idempotency-Key %s. The gateway charges and sends a signed webhook.", key["Idempotency-Key"])
	if _, err := d.do("POST", d.api+"/orders/"+o.ID+"/payments", key, `{}`, nil); err != nil {
		return err
	}
	d.say("3. The client times out and retries with the same key: the stored response comes back.")
	h, err := d.do("POST", d.api+"/orders/"+o.ID+"/payments", key, `{}`, nil)
	if err != nil {
		return err
	}
	d.say("   Idempotent-Replayed: %s", h.Get("Idempotent-Replayed"))
	d.say("4. Wait for the worker: order paid, 2 mugs reserved, commission released, confirmation sent.")
	if err := d.waitAudit(o.ID, 1); err != nil {
		return err
	}
	var charges []struct{ ID string }
	if _, err := d.do("GET", d.fakes+"/charges", nil, "", &charges); err != nil || len(charges) == 0 {
		return fmt.Errorf("read the gateway's charges: %v (found %d)", err, len(charges))
	}
	d.say("5. The provider repeats itself: the same webhook 3 times at once, then a second event for the same payment.")
	if _, err := d.do("POST", d.fakes+"/charges/"+charges[len(charges)-1].ID+"/redeliver", nil, `{"count":3,"concurrent":true}`, nil); err != nil {
		return err
	}
	if _, err := d.do("POST", d.fakes+"/charges/"+charges[len(charges)-1].ID+"/redeliver", nil, `{"count":1,"new_event_id":true}`, nil); err != nil {
		return err
	}
	if err := d.waitAudit(o.ID, 2); err != nil {
		return err
	}
	if _, err := d.do("GET", d.api+"/stock/"+demoSKU, nil, "", nil); err != nil {
		return err
	}
	d.say("\nExecutions grew; every effect stayed at 1 (stock_released is 0: nothing gave the mugs back), and")
	d.say("8 mugs are left. Each guard answered \"already_applied\".")
	d.say("Try it yourself:\n  curl -s %s/orders/%s/audit\n  curl -s %s/stock/%s\n  curl -s %s/charges\n  curl -s %s/notifications",
		d.api, o.ID, d.api, demoSKU, d.fakes, d.fakes)
	return nil
}

// demoSKU is the SKU the demo's order takes.
const demoSKU = "demo-mug"

// waitAudit polls the audit until every effect is 1 and order_paid ran at
// least minRuns times, printing it at the end.
func (d demo) waitAudit(id string, minRuns int64) error {
	var a audit
	q := d
	q.quiet = true
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, err := q.do("GET", d.api+"/orders/"+id+"/audit", nil, "", &a); err != nil {
			return err
		}
		if a.settled(minRuns) && a.Effects[effect.StockReserved] == 1 { // the demo's order has items
			b, _ := json.MarshalIndent(a, "   ", "  ")
			d.say("   GET /orders/%s/audit\n   %s", id, b)
			return nil
		}
	}
	return fmt.Errorf("the flow did not settle within 30s (is the worker running?); last audit: %+v", a)
}

// audit is the API's GET /orders/{id}/audit.
type audit struct {
	Executions map[string]int64 `json:"executions"`
	Effects    map[string]int64 `json:"effects"`
}

func (a audit) settled(minRuns int64) bool {
	for _, k := range []string{effect.Paid, effect.Commission, effect.ConfirmationEnqueued, effect.ConfirmationDelivered, effect.NotificationSent} {
		if a.Effects[k] != 1 {
			return false
		}
	}
	return a.Executions["order_paid"] >= minRuns
}

func (d demo) do(method, url string, headers map[string]string, body string, out any) (http.Header, error) {
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s (is `orderpaid all` running?): %w", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if !d.quiet {
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

func (d demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

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
