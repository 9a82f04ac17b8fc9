package labpage_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/labpage"
)

// TestLabPageProjectorMode drives the page's projector mode in headless
// Chromium: ?projector=1 turns it on, and the table's headers grow and turn
// black; the choice outlives a visit without the parameter; the header's
// button turns it off again, and ?projector=0 does too; and the page draws
// its table in both modes. The page is the embedded one, served by the API
// as in a dev run; only what it polls (GET /lab/state and one order's audit)
// is canned, so no database is needed. It skips when Chromium is not
// installed (Debian: apt-get install -y chromium).
func TestLabPageProjectorMode(t *testing.T) {
	t.Parallel()
	chrome := chromiumPath(t)
	srv := httptest.NewServer(cannedLab())
	t.Cleanup(srv.Close)
	b := startBrowser(t, chrome)

	const (
		header  = `document.querySelector('#orders thead tr:last-child th:last-child')`
		size    = `parseFloat(getComputedStyle(` + header + `).fontSize)`
		on      = `document.documentElement.classList.contains("projector")`
		pressed = `document.getElementById("projector").getAttribute("aria-pressed")`
		stored  = `String(localStorage.getItem("orderpaid-lab-projector"))`
	)
	visit := func(path string) {
		t.Helper()
		b.run(chromedp.Navigate(srv.URL + path))
		b.wait(path+": the page drew the orders table", `document.body.dataset.refreshed !== undefined && document.querySelectorAll('#orders td[data-effect="commission"]').length === 1`)
	}

	visit("/lab")
	if b.eval(on).(bool) || b.eval(pressed) != "false" {
		t.Fatalf("a first visit is in projector mode (class %v, aria-pressed %v), want the ordinary page", b.eval(on), b.eval(pressed))
	}
	normal := b.eval(size).(float64)

	visit("/lab?projector=1")
	if !b.eval(on).(bool) || b.eval(pressed) != "true" || b.eval(stored) != "1" {
		t.Fatalf("?projector=1: class %v, aria-pressed %v, stored %v; want on, true, 1", b.eval(on), b.eval(pressed), b.eval(stored))
	}
	if big := b.eval(size).(float64); big < 1.4*normal || big < 16 {
		t.Errorf("projector mode: the table's headers are %.1fpx, the ordinary page's %.1fpx: want at least 16px and 1.4 times as large", big, normal)
	}
	t.Logf("the table's headers: %.1fpx, in projector mode %.1fpx", normal, b.eval(size))
	if color := b.eval(`getComputedStyle(` + header + `).color`); color != "rgb(0, 0, 0)" {
		t.Errorf("projector mode: the table's headers are %v, want black", color)
	}

	visit("/lab")
	if !b.eval(on).(bool) {
		t.Fatal("a visit without ?projector after ?projector=1 left projector mode: the choice was not remembered")
	}

	b.run(chromedp.Click(chromedp.ID("projector")))
	if b.eval(on).(bool) || b.eval(pressed) != "false" || b.eval(stored) != "0" {
		t.Fatalf("the button did not turn projector mode off: class %v, aria-pressed %v, stored %v", b.eval(on), b.eval(pressed), b.eval(stored))
	}
	if got := b.eval(size).(float64); got != normal {
		t.Errorf("projector mode off: the table's headers are %.1fpx, want the ordinary %.1fpx", got, normal)
	}
	visit("/lab")
	if b.eval(on).(bool) {
		t.Fatal("projector mode came back after the button turned it off")
	}

	b.run(chromedp.Click(chromedp.ID("projector")))
	if !b.eval(on).(bool) {
		t.Fatal("the button did not turn projector mode on")
	}
	visit("/lab?projector=0")
	if b.eval(on).(bool) || b.eval(stored) != "0" {
		t.Fatalf("?projector=0 left projector mode on (stored %v)", b.eval(stored))
	}
}

// TestLabPageProjectorColumns checks, in headless Chromium, that projector
// mode shows every column of the orders table on a projector's screen, at
// 1920x1080 and at 1280x720: the canned order took stock and was refunded,
// so its row has every execution and every effect of exercises 9 and 11
// (stock_reserved, stock_released, refunded, refund_notified,
// commission_reversed, ...). Each of their cells and headers must lie inside
// the viewport, and the table must not scroll sideways. In the ordinary
// mode, two neighbouring headers must not touch.
func TestLabPageProjectorColumns(t *testing.T) {
	t.Parallel()
	chrome := chromiumPath(t)
	srv := httptest.NewServer(cannedLab())
	t.Cleanup(srv.Close)
	b := startBrowser(t, chrome)

	// outside lists what is not wholly in the viewport: each cell of the
	// order's row and each header of an execution or effect.
	outside := labpage.OffScreen
	need := []string{"stock_reserved", "stock_released", "refunded", "refund_notified", "commission_reversed", "refund_failed", "paid", "charges"}
	for _, vp := range []struct{ w, h int64 }{{1920, 1080}, {1280, 720}} {
		b.run(chromedp.EmulateViewport(vp.w, vp.h), chromedp.Navigate(srv.URL+"/lab?projector=1"))
		b.wait("the page drew the refunded order", `document.body.dataset.refreshed !== undefined && document.querySelectorAll('#orders td[data-effect="stock_released"]').length === 1`)
		for _, k := range need {
			if n := b.eval(`document.querySelectorAll('#orders td[data-effect="` + k + `"]').length`); n != 1.0 {
				t.Errorf("%dx%d: %v cells of %s, want 1", vp.w, vp.h, n, k)
			}
		}
		if bad := b.eval(outside).(string); bad != "" {
			t.Errorf("projector mode at %dx%d: not on screen: %s", vp.w, vp.h, bad)
		}
		b.shot(fmt.Sprintf("projector-%dx%d.png", vp.w, vp.h))
	}

	// The ordinary mode: between two headers' text there is room.
	b.run(chromedp.EmulateViewport(1600, 1000), chromedp.Navigate(srv.URL+"/lab?projector=0"))
	b.wait("the page drew the refunded order", `document.body.dataset.refreshed !== undefined && document.querySelectorAll('#orders td[data-effect="stock_released"]').length === 1`)
	const touching = `(() => {
		const ks = [...document.querySelectorAll('#orders th.key .k')], bad = [];
		for (let i = 1; i < ks.length; i++) {
			const a = ks[i-1].getBoundingClientRect(), b = ks[i].getBoundingClientRect();
			if (b.left - a.right < 12) bad.push(ks[i-1].textContent + " and " + ks[i].textContent + ": " + Math.round(b.left - a.right) + "px apart");
		}
		return bad.join("; ");
	})()`
	if bad := b.eval(touching).(string); bad != "" {
		t.Errorf("ordinary mode: headers run together: %s", bad)
	}
	b.shot("normal-1600x1000.png")
}

// shot writes a screenshot of the page to $LAB_PROJECTOR_SHOTS/name when
// that variable names a directory, to look at the layout.
func (b *tab) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("LAB_PROJECTOR_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// cannedLab is the API with its lab page, except for what the page polls:
// a state with one order and that order's audit, its commission twice, its
// stock taken and given back, and refunded; and the stock of the page's SKU.
func cannedLab() http.Handler {
	logger := slog.New(slog.DiscardHandler)
	api := httpapi.NewServer(httpapi.Deps{Logger: logger, Lab: labpage.New(labpage.Config{Process: "all", Logger: logger})})
	const id = "0b8d6f7e-2f43-4b8e-9a55-0d6f3f1c2a10"
	state := `{"process":"all","broker":"postgres","fakes_url":"http://127.0.0.1:8081","guards":[{"name":"ledger-key","off":false,"fixed":false}],` +
		`"switchable":true,"guards_note":"","fault_points":[],"poison":[],"providers":{},` +
		`"orders":[{"id":"` + id + `","status":"refunded","customer_id":"c-lab","amount_cents":10000,"currency":"BRL"}]}`
	audit := `{"order_id":"` + id + `","executions":{"order_paid":6,"order_confirmed":1,"refund_requested":1,"order_refunded":4,"refund_confirmed":1},` +
		`"effects":{"charges":1,"paid":1,"commission":2,"confirmation_enqueued":1,"confirmation_delivered":1,"notification_sent":1,` +
		`"stock_reserved":1,"stock_released":1,"commission_reversed":1,"refunded":1,"refund_notified":1,"refund_failed":0},"cleaned":[],"reconciled":[]}`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/lab/state":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, state)
		case "/orders/" + id + "/audit":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, audit)
		case "/stock/sku-lab":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"sku":"sku-lab","available":8,"reserved":2}`)
		default:
			api.ServeHTTP(w, r)
		}
	})
}

// chromiumPath returns the path of a Chromium to drive, or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("Chromium is not installed (Debian: apt-get install -y chromium): the projector mode's browser test is skipped")
	return ""
}

// tab is one headless Chromium tab, closed when the test ends.
type tab struct {
	t   *testing.T
	ctx context.Context
}

func startBrowser(t *testing.T, path string) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1600, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // start the browser, without a timeout
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return &tab{t: t, ctx: ctx}
}

func (b *tab) run(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// eval is the value of the expression js in the page: a bool, a float64 or
// a string.
func (b *tab) eval(js string) any {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// wait polls the boolean expression js until it holds.
func (b *tab) wait(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second) // two shared cores may be busy
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js)); err == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.t.Fatalf("%s: not on the page within 60s (error line: %v)", what, strings.TrimSpace(b.eval(`document.getElementById("error").textContent`).(string)))
}
