package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// routes is the whole API surface, in one place.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(nameSpanByRoute, middleware.Recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { s.problem(w, r, errRouteNotFound) })
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Allow", strings.Join(allowedMethods(r, req), ", ")) // a 405 must say what is allowed (RFC 9110)
		s.problem(w, req, errMethodNotAllowed)
	})

	r.With(s.requireJSON(untypedRefused)).Post("/orders", s.handleOrderCreate)
	order := r.With(withOrderID) // order.id on the spans of these requests
	order.Get("/orders/{id}", s.handleOrderGet)
	order.Get("/orders/{id}/audit", s.handleOrderAudit)
	// A payment may come without Content-Type (its body may be empty); one that
	// declares another type is refused. The Idempotency-Key header it needs
	// already makes a browser ask first, so no page can send it cross-site.
	order.With(s.requireJSON(untypedReadAsJSON)).Post("/orders/{id}/payments", s.handlePaymentCreate)
	order.With(s.requireJSON(untypedReadAsJSON)).Post("/orders/{id}/refunds", s.handleRefundCreate)
	r.Post("/webhooks/payments", s.handleWebhook) // Content-Type not checked: see handleWebhook
	r.With(s.requireJSON(untypedRefused)).Put("/stock/{sku}", s.handleStockSet)
	r.Get("/stock/{sku}", s.handleStockGet)

	s.labRoutes(r) // GET /lab and what the page reads and does (Deps.Lab)

	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	if s.Telemetry != nil && s.Telemetry.MetricsHandler != nil {
		r.Method(http.MethodGet, "/metrics", s.Telemetry.MetricsHandler)
	}
	return s.instrument(r)
}

// labRoutes adds the lab page's routes (GET /lab and the endpoints it reads
// and acts through, internal/lab/labpage) in a dev run. Without a lab page
// (a production process) GET /lab says how to get one and nothing else is
// mounted.
func (s *server) labRoutes(r chi.Router) {
	if s.Lab != nil {
		s.Lab.Mount(r)
		return
	}
	r.Get("/lab", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(Problem{Type: "about:blank", Title: "No lab page in this process", Status: http.StatusNotFound,
			Detail: "the lab page is served by orderpaid-lab in a dev run only: `orderpaid-lab all`, or ORDERPAID_DEV=1 orderpaid-lab api"})
	})
}

// allowedMethods lists the methods routes serves at req's path, for the Allow
// header of a 405.
func allowedMethods(routes chi.Routes, req *http.Request) []string {
	path := req.URL.RawPath
	if path == "" {
		path = req.URL.Path
	}
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if routes.Match(chi.NewRouteContext(), m, path) {
			allowed = append(allowed, m)
		}
	}
	return allowed
}
