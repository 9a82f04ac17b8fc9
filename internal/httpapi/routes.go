package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// routes is the whole API surface, in one place.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(nameSpanByRoute, middleware.Recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { s.problem(w, r, errRouteNotFound) })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) { s.problem(w, r, errMethodNotAllowed) })

	r.Post("/orders", s.handleOrderCreate)
	order := r.With(withOrderID) // order.id on the spans of these requests
	order.Get("/orders/{id}", s.handleOrderGet)
	order.Get("/orders/{id}/audit", s.handleOrderAudit)
	order.Post("/orders/{id}/payments", s.handlePaymentCreate)
	r.Post("/webhooks/payments", s.handleWebhook)

	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	if s.Telemetry != nil && s.Telemetry.MetricsHandler != nil {
		r.Method(http.MethodGet, "/metrics", s.Telemetry.MetricsHandler)
	}
	return s.instrument(r)
}
