package labpage

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// Config is what the lab page (GET /lab) reads and acts through. cmd/orderpaid
// sets it in a dev run only (`orderpaid-lab all`, or ORDERPAID_DEV=1): the page
// lists recent orders and can re-enqueue messages, which no production API
// should let anyone reaching it do. The page is a view, not a second
// implementation: every control calls what the command line calls (the
// API's own endpoints, the fakes' control endpoints, the reprocess tool,
// the process's switch set), and each answer names that command.
type Config struct {
	// Process names the command that serves the page ("all", "api") and
	// Broker the broker it runs on, both shown on the page.
	Process, Broker string
	// FakesURL is where the fakes' control endpoints are (FAKES_URL).
	FakesURL string
	// HTTPClient calls them; nil: a client with a 10s timeout.
	HTTPClient *http.Client
	// Switches are the process's guards switched off (nil: every guard on,
	// none switchable). When they are live (switches.Set.Live), the page
	// switches guards in them; otherwise GuardsNote says why it cannot.
	Switches   *switches.Set
	GuardsNote string
	// Faults are the process's fault points, and FaultPoints the ones the
	// page may arm in it, in error mode: a failure between two effects, as
	// a crash there leaves it, without ending the process that serves the
	// page. Empty, or no fault set: the page cannot.
	Faults      *fault.Set
	FaultPoints []string
	// Replay runs `orderpaid reprocess` (internal/ops/reprocess) for one
	// target, writing its plan and progress to out; nil: the page cannot
	// replay, and says which command does.
	Replay func(ctx context.Context, t ReplayTarget, out io.Writer) error
	// Pool is the service's database, which the page reads (the recent
	// orders, an order's timeline, the poison queue).
	Pool *pgxpool.Pool
	// Logger records what the page switched and what failed; nil:
	// slog.Default().
	Logger *slog.Logger
}

// ReplayTarget is what one replay sends again: exactly one of an order's
// order_paid (--order), one message of the outbox (--message) or the poison
// queue (--poison).
type ReplayTarget struct {
	OrderID   uuid.UUID `json:"order_id"`
	MessageID string    `json:"message_id"`
	Poison    bool      `json:"poison"`
}

//go:embed assets
var labAssets embed.FS

// Mount adds the lab page (GET /lab) and the endpoints it reads and acts
// through to r, the API's router (httpapi.Deps.Lab): they answer under its
// middleware (the request's span, named by route; recovery) and its
// answers to an unknown route or method.
func (p *Page) Mount(r chi.Router) {
	r.Get("/lab", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, req, labAssets, "assets/index.html")
	})
	r.Get("/lab/assets/{file}", func(w http.ResponseWriter, req *http.Request) {
		http.ServeFileFS(w, req, labAssets, "assets/"+chi.URLParam(req, "file"))
	})
	r.Get("/lab/state", p.handleLabState)
	r.With(withOrderID).Get("/lab/orders/{id}/timeline", p.handleLabTimeline)

	// Every control answers the lab page on this machine only (see
	// requireLocalPage: a foreign Host or Origin is refused, DNS rebinding
	// included), and takes JSON only: a browser must ask before sending it
	// cross-site (see requireJSON), so no other web page can pull a lever.
	act := r.With(p.requireLocalPage, p.requireJSON)
	act.With(withOrderID).Post("/lab/orders/{id}/redeliver", p.handleLabRedeliver)
	act.Post("/lab/providers/{provider}", p.handleLabProvider)
	act.Post("/lab/replay", p.handleLabReplay)
	act.Post("/lab/guards/{guard}", p.handleLabGuard)
	act.Post("/lab/faults/{point}", p.handleLabFault)
}

// labError is a refusal of a lab endpoint, with its status.
type labError struct {
	status        int
	title, detail string
}

func (e labError) Error() string { return e.title + ": " + e.detail }

// problem answers a labError as a problem detail (RFC 9457) with its own
// status, as the API answers its own refusals; anything else is logged and
// answered 500 without internals.
func (p *Page) problem(w http.ResponseWriter, r *http.Request, err error) {
	var le labError
	if !errors.As(err, &le) {
		p.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		le = labError{status: http.StatusInternalServerError, title: "Internal server error"}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(le.status)
	_ = json.NewEncoder(w).Encode(httpapi.Problem{Type: "about:blank", Title: le.title, Status: le.status, Detail: truncate(le.detail, maxDetail)})
}
