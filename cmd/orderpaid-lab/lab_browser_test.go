package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orderpaid/orderpaid/internal/lab/labpage"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// TestLabPageInBrowser drives the lab page (GET /lab) of `orderpaid-lab all` in
// headless Chromium as a workshop would: create and pay an order, make the
// gateway send its webhook five more times as new events, and see the
// executions grow while every effect stays at 1; then switch the ledger key
// off on the page, do it again, and see the commission reach 2. It skips
// when Chromium is not installed (apt-get install -y chromium). With
// LAB_SCREENSHOTS=1 it writes the screenshots of docs/lab.md
// (docs/images/lab-*.png).
func TestLabPageInBrowser(t *testing.T) {
	t.Parallel()
	api, b := startLabAll(t)
	b.do(chromedp.Navigate(api+"/lab"), chromedp.WaitVisible(chromedp.ID("create-pay")))
	b.waitJS("the page drew its first state", `document.body.dataset.refreshed !== undefined`)

	b.do(chromedp.Click(chromedp.ID("create-pay")))
	b.waitJS("an order selected", `document.getElementById("selected-order").dataset.order !== ""`)
	id := b.text(`document.getElementById("selected-order").dataset.order`)
	effects := []string{"charges", "paid", "commission", "confirmation_enqueued", "confirmation_delivered", "notification_sent"}
	b.waitCounts(id, "the order paid, every effect once", map[string]int{"order_paid": 1}, once(effects))

	// Five more events for the same payment: each is a new order_paid.
	b.do(chromedp.SetValue(chromedp.ID("redeliver-count"), "5"), chromedp.Click(chromedp.ID("redeliver-new-event")),
		chromedp.Click(chromedp.ID("redeliver")))
	b.waitCounts(id, "five more executions, every effect still once", map[string]int{"order_paid": 6}, once(effects))
	b.waitJS("the timeline shows the six runs", `document.querySelectorAll('#timeline li[data-kind="execution"]').length >= 6`)
	time.Sleep(time.Second) // whatever the redeliveries could still do, they have done
	b.waitCounts(id, "every effect still once after the dust settles", map[string]int{"order_paid": 6}, once(effects))
	b.screenshot("lab-guards-on.png", `window.scrollTo(0, 0)`)

	// The ledger key off, on the page: the same five events now pay the
	// affiliate again.
	b.click("guard-ledger-key")
	b.waitJS("the warning banner names the guard", `!document.getElementById("banner").hidden && document.getElementById("banner").textContent.includes("ledger-key")`)
	b.do(chromedp.Click(chromedp.ID("redeliver")))
	b.waitCounts(id, "five more executions", map[string]int{"order_paid": 11}, nil)
	b.waitJS("the commission at least 2", cellJS(id, "effect", "commission")+` >= 2`)
	b.waitJS("the commission cell marked as twice", `document.querySelector('tr[data-order="`+id+`"] td[data-effect="commission"]').classList.contains("twice")`)
	b.screenshot("lab-guard-off.png", `window.scrollTo(0, 0)`)
	b.screenshot("lab-controls.png", `document.getElementById("providers").scrollIntoView()`)

	b.click("guard-ledger-key")
	b.waitJS("the banner gone with the guard back on", `document.getElementById("banner").hidden`)
}

// TestLabPageStockAndRefundInBrowser runs exercises 9 and 11 on the lab page
// of `orderpaid-lab all`, in projector mode, in headless Chromium: set a
// SKU's stock to 10, create and pay an order of 2 units of it (the stock
// shows 8, stock_reserved 1), refund it (refunded, stock_released,
// commission_reversed, refund_notified 1, the stock 10 again), and make the
// gateway send its payment.refunded three more times as new events: more
// order_refunded runs, every effect still once. Each control prints its
// command line. Then, at 1920x1080 and at 1280x720, every cell of the
// order's row and every header of an execution or effect is inside the
// viewport, and the table does not scroll sideways.
func TestLabPageStockAndRefundInBrowser(t *testing.T) {
	t.Parallel()
	api, b := startLabAll(t)
	b.do(chromedp.EmulateViewport(1920, 1080), chromedp.Navigate(api+"/lab?projector=1"), chromedp.WaitVisible(chromedp.ID("set-stock")))
	b.waitJS("the page drew its first state", `document.body.dataset.refreshed !== undefined`)
	last := `document.getElementById("last-command").textContent`

	sku := fmt.Sprintf("sku-%d", time.Now().UnixNano()%1e9)
	b.do(chromedp.SetValue(chromedp.ID("sku"), sku), chromedp.SetValue(chromedp.ID("stock-available"), "10"),
		chromedp.Click(chromedp.ID("set-stock")))
	b.waitJS("the stock set to 10", `document.getElementById("stock-now").dataset.available === "10"`)
	// Each control prints its line once its requests have answered: wait
	// for it, as a reader would.
	b.waitJS("Set stock's curl line", last+".includes("+strconv.Quote("curl -X PUT $API_URL/stock/"+sku+` -H 'Content-Type: application/json' -d '{"available":10}'`)+")")

	b.do(chromedp.SetValue(chromedp.ID("quantity"), "2"), chromedp.Click(chromedp.ID("create-pay")))
	b.waitJS("an order selected", `document.getElementById("selected-order").dataset.order !== ""`)
	id := b.text(`document.getElementById("selected-order").dataset.order`)
	b.waitJS("Create and pay's curl line with the order's items", last+".includes("+strconv.Quote(`"items":[{"sku":"`+sku+`","quantity":2}]`)+")")
	paid := []string{"charges", "paid", "commission", "confirmation_enqueued", "confirmation_delivered", "notification_sent", "stock_reserved"}
	b.waitCounts(id, "the order paid, its units taken once", map[string]int{"order_paid": 1}, once(paid))
	b.waitJS("the stock down to 8", `document.getElementById("stock-now").dataset.available === "8"`)

	b.do(chromedp.Click(chromedp.ID("refund")))
	b.waitJS("the refund's curl line", last+`.includes("curl -X POST $API_URL/orders/`+id+`/refunds") && `+last+`.includes("Idempotency-Key: lab-refund-`+id+`")`)
	refunded := append(paid, "stock_released", "commission_reversed", "refunded", "refund_notified")
	b.waitCounts(id, "the order refunded, each opposite effect once", nil, once(refunded))
	b.waitJS("the stock back to 10", `document.getElementById("stock-now").dataset.available === "10"`)
	b.waitJS("the provider's payment.refunded handled", cellJS(id, "execution", "order_refunded")+` >= 1`)

	// Three more events for the same refund (exercise 11's repetition).
	runs := b.text(`String(` + cellJS(id, "execution", "order_refunded") + `)`)
	b.do(chromedp.SetValue(chromedp.ID("redeliver-count"), "3"), chromedp.Click(chromedp.ID("redeliver-new-event")),
		chromedp.Click(chromedp.ID("redeliver-refund")), chromedp.Click(chromedp.ID("redeliver")))
	b.waitJS("the refund's redeliver line", last+`.includes("$FAKES_URL/refunds/") && `+last+`.includes("/redeliver")`)
	b.waitJS("three more order_refunded runs", cellJS(id, "execution", "order_refunded")+` >= `+runs+` + 3`)
	time.Sleep(time.Second) // whatever the redeliveries could still do, they have done
	b.waitCounts(id, "every effect still once", nil, once(refunded))

	outside := labpage.OffScreen
	for _, vp := range []struct{ w, h int64 }{{1920, 1080}, {1280, 720}} {
		b.do(chromedp.EmulateViewport(vp.w, vp.h), chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		b.waitJS("a refresh at the new size", `document.body.dataset.refreshed > `+b.text(`document.body.dataset.refreshed`))
		for _, k := range []string{"stock_reserved", "stock_released", "refunded", "refund_notified", "commission_reversed"} {
			if b.text(`String(document.querySelectorAll('#orders tbody tr:first-child td[data-effect="`+k+`"]').length)`) != "1" {
				t.Errorf("%dx%d: the order's row has no %s cell", vp.w, vp.h, k)
			}
		}
		if bad := b.text(outside); bad != "" {
			t.Errorf("projector mode at %dx%d: not on screen: %s", vp.w, vp.h, bad)
		}
	}
}

// findChromium returns the path of a Chromium to drive, or skips the test.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("Chromium is not installed (Debian: apt-get install -y chromium): the lab page's browser test is skipped")
	return ""
}

// browser is one headless Chromium tab, closed when the test ends.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T, path string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1600, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // start the browser, without a timeout (see chromedp.Run)
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return &browser{t: t, ctx: ctx}
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v; page: %s", err, b.state())
	}
}

// click clicks the element with this id from inside the page, found when
// it is clicked: the page draws some controls again at every refresh (the
// guards' buttons), and a node chromedp found a moment before may be gone
// by its click ("Could not find node with given id").
func (b *browser) click(id string) {
	b.t.Helper()
	b.waitJS("#"+id+" clicked", `(() => { const e = document.getElementById(`+strconv.Quote(id)+`); if (!e) return false; e.click(); return true })()`)
}

func (b *browser) text(js string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return s
}

// waitJS polls the boolean expression js in the page until it holds.
func (b *browser) waitJS(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second) // the whole suite may be running on two cores
	for time.Now().Before(deadline) {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.t.Fatalf("%s: not on the page within 60s; page: %s", what, b.state())
}

// waitCounts waits until the order's row shows exactly these executions and
// effects.
func (b *browser) waitCounts(id, what string, executions, effects map[string]int) {
	b.t.Helper()
	cond := "true"
	for k, n := range executions {
		cond += fmt.Sprintf(" && %s === %d", cellJS(id, "execution", k), n)
	}
	for k, n := range effects {
		cond += fmt.Sprintf(" && %s === %d", cellJS(id, "effect", k), n)
	}
	b.waitJS(what, cond)
}

// cellJS is the number the page shows in the order's row for one execution
// or effect key (-1 when there is no such cell).
func cellJS(id, kind, key string) string {
	return fmt.Sprintf(`Number((document.querySelector('tr[data-order="%s"] td[data-%s="%s"]') || {textContent: "-1"}).textContent)`, id, kind, key)
}

// state is the page's orders table and its error line, for a failure message.
func (b *browser) state() string {
	s, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](
		`document.getElementById("orders").innerText + " | error: " + document.getElementById("error").textContent + " | last: " + document.getElementById("last-command").textContent`))
	return s
}

// screenshot writes the page, scrolled by the expression scroll, to
// docs/images/name when LAB_SCREENSHOTS=1.
func (b *browser) screenshot(name, scroll string) {
	b.t.Helper()
	if os.Getenv("LAB_SCREENSHOTS") != "1" {
		return
	}
	b.do(chromedp.Evaluate[chromedp.Void](scroll))
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join("..", "..", "docs", "images", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s", path)
}

func once(keys []string) map[string]int {
	m := map[string]int{}
	for _, k := range keys {
		m[k] = 1
	}
	return m
}

// TestLabPageSeparateProcesses serves the lab page from an api that runs
// apart from its worker and fakes, on every broker: the page reads and its
// controls act (redeliver, replay, provider settings) as in `orderpaid-lab all`,
// and it refuses to switch a guard, saying how to start workshop mode.
func TestLabPageSeparateProcesses(t *testing.T) {
	t.Parallel()
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			testLabPageSeparateProcesses(t, brokerEnv(t, b.name), b.name)
		})
	}
}

func testLabPageSeparateProcesses(t *testing.T, env map[string]string, brokerName string) {
	_, dbURL := pgtest.NewDatabase(t)
	apiAddr, fakesAddr := freeAddr(t), freeAddr(t)
	api := "http://" + apiAddr
	env = merge(env, map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": apiAddr, "FAKES_ADDR": fakesAddr,
		"FAKES_URL": "http://" + fakesAddr, "WEBHOOK_URL": api + "/webhooks/payments",
	})
	startRun(t, env, newAddrWatcher(), "fakes")
	startRun(t, env, newAddrWatcher(), "worker")
	startRun(t, env, newAddrWatcher(), "api")
	eventually(t, 10*time.Second, "api healthy", func() (bool, string) { return healthy(api + "/healthz") })

	var st struct {
		Process    string                    `json:"process"`
		Broker     string                    `json:"broker"`
		Switchable bool                      `json:"switchable"`
		GuardsNote string                    `json:"guards_note"`
		Providers  map[string]map[string]int `json:"providers"`
	}
	if got := call(t, "GET", api+"/lab/state", nil, nil, &st); got != http.StatusOK {
		t.Fatalf("GET /lab/state = %d", got)
	}
	if st.Process != "api" || st.Broker != brokerName || st.Switchable || !strings.Contains(st.GuardsNote, "orderpaid-lab all") {
		t.Errorf("GET /lab/state = %+v: want process api on %s, guards not switchable, a note naming `orderpaid-lab all`", st, brokerName)
	}
	if got := call(t, "POST", api+"/lab/guards/ledger-key", nil, map[string]any{"off": true}, nil); got != http.StatusConflict {
		t.Errorf("POST /lab/guards/ledger-key in a lone api = %d, want 409", got)
	}

	var created struct{ ID string }
	call(t, "POST", api+"/orders", nil, map[string]any{"customer_id": "c1", "affiliate_id": "a1", "amount_cents": 10000, "currency": "BRL"}, &created)
	call(t, "POST", api+"/orders/"+created.ID+"/payments", map[string]string{"Idempotency-Key": "lab-" + created.ID}, map[string]any{}, nil)
	settled := func(runs int64) func() (bool, string) {
		return func() (bool, string) {
			var a struct {
				Executions map[string]int64 `json:"executions"`
				Effects    map[string]int64 `json:"effects"`
			}
			call(t, "GET", api+"/orders/"+created.ID+"/audit", nil, nil, &a)
			for _, k := range []string{"charges", "paid", "commission", "confirmation_enqueued", "confirmation_delivered", "notification_sent"} {
				if a.Effects[k] != 1 {
					return false, fmt.Sprint(a)
				}
			}
			return a.Executions["order_paid"] == runs, fmt.Sprint(a)
		}
	}
	eventually(t, 30*time.Second, "the order paid, every effect once", settled(1))

	var done struct {
		OK     bool   `json:"ok"`
		CLI    string `json:"cli"`
		Output string `json:"output"`
	}
	call(t, "POST", api+"/lab/orders/"+created.ID+"/redeliver", nil, map[string]any{"count": 2, "new_event_id": true}, &done)
	if !done.OK || !strings.Contains(done.CLI, "/redeliver") {
		t.Fatalf("redeliver from the page: %+v", done)
	}
	eventually(t, 30*time.Second, "two more executions, every effect once", settled(3))
	call(t, "POST", api+"/lab/replay", nil, map[string]any{"order_id": created.ID}, &done)
	if !done.OK || done.CLI != "orderpaid reprocess --order "+created.ID || !strings.Contains(done.Output, "replayed 1 message") {
		t.Fatalf("replay from the page: %+v", done)
	}
	eventually(t, 30*time.Second, "the replay handled, every effect once", settled(4))
	call(t, "POST", api+"/lab/replay", nil, map[string]any{"poison": true}, &done)
	if !done.OK || !strings.Contains(done.Output, "poison queue: 0 pending") {
		t.Errorf("poison replay from the page: %+v", done)
	}

	var tl struct {
		Events []struct{ Kind string } `json:"events"`
	}
	call(t, "GET", api+"/lab/orders/"+created.ID+"/timeline", nil, nil, &tl)
	kinds := map[string]int{}
	for _, e := range tl.Events {
		kinds[e.Kind]++
	}
	if kinds["webhook"] != 3 || kinds["delivery"] < 3 || kinds["execution"] < 4 || kinds["gateway"] != 1 || kinds["notification"] < 1 {
		t.Errorf("timeline kinds = %v: want 3 webhooks, their deliveries, 4+ executions, 1 gateway call, a notification", kinds)
	}

	call(t, "POST", api+"/lab/providers/notifications", nil, map[string]any{"delay_ms": 5}, &done)
	call(t, "GET", api+"/lab/state", nil, nil, &st)
	if !done.OK || st.Providers["notifications"]["delay_ms"] != 5 {
		t.Errorf("provider settings from the page: %+v, state now %v", done, st.Providers)
	}
	if got := call(t, "POST", api+"/lab/providers/notifications", nil, map[string]any{"delay_ms": -1}, &done); got != http.StatusOK || done.OK {
		t.Errorf("a bad setting: %d %+v, want the fakes' refusal passed on", got, done)
	}
}

// startLabAll starts `orderpaid-lab all` on the postgres broker and a
// headless Chromium, and returns the api's URL and the browser. It skips
// when Chromium is not installed.
func startLabAll(t *testing.T) (api string, b *browser) {
	t.Helper()
	chrome := findChromium(t)
	env := brokerEnv(t, "postgres")
	_, dbURL := pgtest.NewDatabase(t)
	out := newAddrWatcher("api", "fakes")
	startRun(t, merge(env, map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": freeAddr(t), "FAKES_ADDR": freeAddr(t),
	}), out, "all")
	api = out.addr(t, "api")
	eventually(t, 10*time.Second, "api healthy", func() (bool, string) { return healthy(api + "/healthz") })

	b = newBrowser(t, chrome)
	return api, b
}
