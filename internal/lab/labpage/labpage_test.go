package labpage_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/labpage"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
)

// labRequest serves one request to an API whose lab page is cfg's, as
// curl on the machine that runs it sends it: Host 127.0.0.1:8080, no Origin.
func labRequest(t *testing.T, cfg labpage.Config, method, path, contentType, body string) *httptest.ResponseRecorder {
	t.Helper()
	return labRequestFrom(t, cfg, method, path, contentType, body, "127.0.0.1:8080", "")
}

// labRequestFrom is labRequest with the Host and Origin ("": none) a
// browser or a client sends.
func labRequestFrom(t *testing.T, cfg labpage.Config, method, path, contentType, body, host, origin string) *httptest.ResponseRecorder {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if cfg.Logger == nil {
		cfg.Logger = logger
	}
	h := httpapi.NewServer(httpapi.Deps{Logger: logger, Lab: labpage.New(cfg)})
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestLabPageAssets(t *testing.T) {
	t.Parallel()
	lab := labpage.Config{Process: "all"}
	for path, want := range map[string]string{"/lab": "text/html", "/lab/assets/lab.js": "javascript", "/lab/assets/lab.css": "text/css"} {
		rec := labRequest(t, lab, "GET", path, "", "")
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), want) {
			t.Errorf("GET %s = %d %q, want 200 %s", path, rec.Code, rec.Header().Get("Content-Type"), want)
		}
	}
	if rec := labRequest(t, lab, "GET", "/lab/assets/nothing.js", "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("GET of an asset that is not there = %d, want 404", rec.Code)
	}
}

// The page's routes are the API's: a path under /lab that is none of them,
// or a method a route does not take, is answered as anywhere else in the
// API (a 404 problem; a 405 saying what is allowed).
func TestLabRoutesAreTheAPIs(t *testing.T) {
	t.Parallel()
	lab := labpage.Config{Process: "all"}
	for _, path := range []string{"/lab/", "/lab/nothing", "/lab/guards"} {
		if rec := labRequest(t, lab, "GET", path, "", ""); rec.Code != http.StatusNotFound || rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s = %d %q, want a 404 problem", path, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
	for path, allow := range map[string]string{"/lab": "GET", "/lab/state": "GET", "/lab/guards/inbox": "POST"} {
		if rec := labRequest(t, lab, "PUT", path, "application/json", `{}`); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != allow {
			t.Errorf("PUT %s = %d, Allow %q: want 405, Allow %q", path, rec.Code, rec.Header().Get("Allow"), allow)
		}
	}
}

// The guard toggle switches the process's shared switch set, only where
// there is one, and only from a JSON request (no other web page can send it
// without asking).
func TestLabGuardToggle(t *testing.T) {
	t.Parallel()
	fixed, err := switches.Parse("inbox")
	if err != nil {
		t.Fatal(err)
	}
	sw := fixed.Live()
	lab := labpage.Config{Process: "all", Switches: sw}

	if rec := labRequest(t, lab, "POST", "/lab/guards/ledger-key", "text/plain", `{"off":true}`); rec.Code != http.StatusUnsupportedMediaType || sw.Off(effect.GuardLedgerKey) {
		t.Errorf("a text/plain toggle = %d, ledger-key off %v: want 415 and nothing switched", rec.Code, sw.Off(effect.GuardLedgerKey))
	}
	rec := labRequest(t, lab, "POST", "/lab/guards/ledger-key", "application/json", `{"off":true}`)
	if rec.Code != http.StatusOK || !sw.Off(effect.GuardLedgerKey) {
		t.Fatalf("switch ledger-key off = %d %s, off now %v", rec.Code, rec.Body, sw.Off(effect.GuardLedgerKey))
	}
	if !strings.Contains(rec.Body.String(), "--without ledger-key") {
		t.Errorf("the answer names no command line: %s", rec.Body)
	}
	if rec := labRequest(t, lab, "POST", "/lab/guards/ledger-key", "application/json", `{"off":false}`); rec.Code != http.StatusOK || sw.Off(effect.GuardLedgerKey) {
		t.Errorf("switch ledger-key on = %d, off now %v", rec.Code, sw.Off(effect.GuardLedgerKey))
	}
	if rec := labRequest(t, lab, "POST", "/lab/guards/inbox", "application/json", `{"off":false}`); rec.Code != http.StatusConflict || !sw.Off(effect.GuardInbox) {
		t.Errorf("switch on a --without guard = %d, want 409 and the guard left off", rec.Code)
	}
	if rec := labRequest(t, lab, "POST", "/lab/guards/everything", "application/json", `{"off":true}`); rec.Code != http.StatusBadRequest {
		t.Errorf("an unknown guard = %d, want 400", rec.Code)
	}
	// An api alone has no switch set (the nil set, production's, as
	// cmd/orderpaid-lab wires it): a toggle is refused with the note.
	alone := labpage.Config{Process: "api", GuardsNote: "start orderpaid-lab all"}
	if rec := labRequest(t, alone, "POST", "/lab/guards/ledger-key", "application/json", `{"off":true}`); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "orderpaid-lab all") {
		t.Errorf("a toggle without a switch set = %d %s, want 409 with the note", rec.Code, rec.Body)
	}
}
