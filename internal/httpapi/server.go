package httpapi

import (
	"context"
	"log/slog"
	"net/http"

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
	// Lab serves the lab page, GET /lab (lab.go): set in a dev run only.
	// nil: no lab page.
	Lab *Lab
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
