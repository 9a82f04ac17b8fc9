package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/orderpaid/orderpaid/internal/httpapi"
)

// labHookRequest serves one request to an API whose lab page is lab (nil:
// none).
func labHookRequest(t *testing.T, lab httpapi.LabPage, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	h := httpapi.NewServer(httpapi.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Lab: lab})
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A production API (no lab page) serves no lab page, and says how to get
// one.
func TestLabPageOnlyInADevRun(t *testing.T) {
	t.Parallel()
	rec := labHookRequest(t, nil, "GET", "/lab", "")
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "orderpaid-lab all") {
		t.Errorf("GET /lab without a lab = %d %s, want 404 naming `orderpaid-lab all`", rec.Code, rec.Body)
	}
	if rec := labHookRequest(t, nil, "POST", "/lab/guards/ledger-key", `{"off":true}`); rec.Code != http.StatusNotFound {
		t.Errorf("POST /lab/guards/ledger-key without a lab = %d, want 404", rec.Code)
	}
}

// fakeLab is a lab page of one route.
type fakeLab struct{}

func (fakeLab) Mount(r chi.Router) {
	r.Get("/lab", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "the lab page") })
}

// A dev run's API serves the routes its lab page adds, and nothing in
// place of them.
func TestLabPageMounted(t *testing.T) {
	t.Parallel()
	if rec := labHookRequest(t, fakeLab{}, "GET", "/lab", ""); rec.Code != http.StatusOK || rec.Body.String() != "the lab page" {
		t.Errorf("GET /lab with a lab page = %d %s, want the page's answer", rec.Code, rec.Body)
	}
}
