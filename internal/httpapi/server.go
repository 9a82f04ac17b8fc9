package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Deps is what the API needs.
type Deps struct {
	Pool     *pgxpool.Pool
	Ingestor *webhook.Ingestor
	Payments Payer
	// Ready lists the checks /readyz runs, by name (database, broker).
	Ready  map[string]func(ctx context.Context) error
	Logger *slog.Logger
	// Telemetry traces every request (a span per request, named by route),
	// records the HTTP metrics and serves GET /metrics. nil: none of that.
	Telemetry *telemetry.Telemetry
	// Lab is the lab page, GET /lab and what the page reads and does
	// (internal/lab/labpage, which the API may not import): set in a dev
	// run only. nil: no lab page.
	Lab LabPage
}

// LabPage is the lab page as the API sees it: routes it adds to the API's
// router (labpage.Page.Mount), which serves them under its own middleware
// and answers an unknown route or method under /lab as anywhere else.
type LabPage interface {
	Mount(r chi.Router)
}

type server struct {
	Deps
	q *queries.Queries
}

// NewServer returns the API as one http.Handler (routes.go lists the routes).
func NewServer(d Deps) http.Handler {
	s := &server{Deps: d, q: queries.New(d.Pool)}
	return s.routes()
}
