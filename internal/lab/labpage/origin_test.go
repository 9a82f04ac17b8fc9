package labpage_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/labpage"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// The lab's controls answer the lab page on this machine, and curl there,
// only. A page elsewhere (a foreign Origin) or a name that is not this
// machine's (a foreign Host: DNS rebinding points evil.example at
// 127.0.0.1, and the browser then sends Host: evil.example) is refused with
// a 403 problem, before anything is done: no guard switched, no fault
// armed, no provider told, nothing replayed.
func TestLabControlsRefuseAForeignOriginOrHost(t *testing.T) {
	t.Parallel()
	var fakesCalls, replays atomic.Int32
	fakes := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fakesCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	t.Cleanup(fakes.Close)
	const point = "order_paid.after_mark_paid"
	sw := (*switches.Set)(nil).Live()
	faults := fault.New(func() { t.Error("an error-mode fault crashed") })
	lab := labpage.Config{Process: "all", Switches: sw, Faults: faults, FakesURL: fakes.URL, FaultPoints: []string{point},
		Replay: func(context.Context, labpage.ReplayTarget, io.Writer) error { replays.Add(1); return nil }}

	controls := []struct{ path, body string }{
		{"/lab/guards/ledger-key", `{"off":true}`},
		{"/lab/faults/" + point, `{"times":1}`},
		{"/lab/providers/gateway", `{"fail_next":1}`},
		{"/lab/replay", `{"poison":true}`},
		{"/lab/orders/" + uuid.NewString() + "/redeliver", `{"count":1}`},
	}
	for _, from := range []struct{ name, host, origin string }{
		{"a foreign Origin", "127.0.0.1:8080", "http://evil.example"},
		{"a foreign Host without Origin", "evil.example", ""},
		{"a foreign Host and its Origin (DNS rebinding)", "evil.example:8080", "http://evil.example:8080"},
		// A name that ends in localhost without being under .localhost is
		// anyone's: refusing it kills the mutant of loopbackHost that checks
		// HasSuffix(host, "localhost"), without the dot.
		{"a foreign Host ending in localhost and its Origin", "evillocalhost:8080", "http://evillocalhost:8080"},
		{"another page on this machine", "localhost:8080", "http://localhost:3000"},
		{"an opaque origin", "localhost:8080", "null"},
		{"a network address", "192.168.1.20:8080", ""},
	} {
		t.Run(from.name, func(t *testing.T) {
			for _, c := range controls {
				rec := labRequestFrom(t, lab, "POST", c.path, "application/json", c.body, from.host, from.origin)
				if rec.Code != http.StatusForbidden || rec.Header().Get("Content-Type") != "application/problem+json" ||
					!strings.Contains(rec.Body.String(), "/lab") {
					t.Errorf("POST %s: %d %s %s, want a 403 problem saying where the lab page is", c.path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
				}
			}
		})
	}
	if off := sw.OffNow(); len(off) != 0 || sw.Off(effect.GuardLedgerKey) {
		t.Errorf("a refused control switched a guard off (%q)", off)
	}
	if err := faults.Hit(point); errors.Is(err, fault.ErrInjected) {
		t.Error("a refused control armed a fault")
	}
	if n, r := fakesCalls.Load(), replays.Load(); n != 0 || r != 0 {
		t.Errorf("refused controls called the fakes %d times and replayed %d times, want none", n, r)
	}

	// The lab page itself, and curl on this machine, by any loopback name.
	for _, from := range []struct{ name, host, origin string }{
		{"curl to 127.0.0.1", "127.0.0.1:8080", ""},
		{"curl to localhost", "localhost:8080", ""},
		{"the lab page at 127.0.0.1", "127.0.0.1:18080", "http://127.0.0.1:18080"},
		{"the lab page at localhost", "localhost:8080", "http://localhost:8080"},
		{"the lab page at ::1", "[::1]:8080", "http://[::1]:8080"},
	} {
		t.Run(from.name, func(t *testing.T) {
			for _, off := range []string{`{"off":true}`, `{"off":false}`} {
				if rec := labRequestFrom(t, lab, "POST", "/lab/guards/ledger-key", "application/json", off, from.host, from.origin); rec.Code != http.StatusOK {
					t.Errorf("switch ledger-key %s: %d %s, want 200", off, rec.Code, rec.Body)
				}
			}
		})
	}
	page := func(path, body string) int {
		return labRequestFrom(t, lab, "POST", path, "application/json", body, "localhost:8080", "http://localhost:8080").Code
	}
	if code := page("/lab/providers/gateway", `{"fail_next":0}`); code != http.StatusOK || fakesCalls.Load() != 1 {
		t.Errorf("the page's provider setting: %d, fakes called %d times; want 200, once", code, fakesCalls.Load())
	}
	if code := page("/lab/replay", `{"poison":true}`); code != http.StatusOK || replays.Load() != 1 {
		t.Errorf("the page's replay: %d, replayed %d times; want 200, once", code, replays.Load())
	}
}
