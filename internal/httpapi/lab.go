package httpapi

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// Lab is what the lab page (GET /lab) reads and acts through. cmd/orderpaid
// sets it in a dev run only (`orderpaid all`, or ORDERPAID_DEV=1): the page
// lists recent orders and can re-enqueue messages, which no production API
// should let anyone reaching it do. The page is a view, not a second
// implementation: every control calls what the command line calls (the
// API's own endpoints, the fakes' control endpoints, the reprocess tool,
// the process's switch set), and each answer names that command.
type Lab struct {
	// Process names the command that serves the page ("all", "api") and
	// Broker the broker it runs on, both shown on the page.
	Process, Broker string
	// FakesURL is where the fakes' control endpoints are (FAKES_URL).
	FakesURL string
	// HTTPClient calls them; nil: a client with a 10s timeout.
	HTTPClient *http.Client
	// Switches are the process's guards switched off. When they are live
	// (switches.Set.Live), the page switches guards in them; otherwise
	// GuardsNote says why it cannot.
	Switches   Switches
	GuardsNote string
	// Faults are the process's fault points, and FaultPoints the ones the
	// page may arm in it, in error mode: a failure between two effects, as
	// a crash there leaves it, without ending the process that serves the
	// page. Empty, or no fault set: the page cannot.
	Faults      *fault.Set
	FaultPoints []string
	// Replay runs `orderpaid reprocess` (internal/ops/reprocess, which the
	// API may not import) for one target, writing its plan and progress to
	// out.
	Replay func(ctx context.Context, t ReplayTarget, out io.Writer) error
}

// Switches is what the page reads and switches of the process's guards
// (the lab's switch set, internal/lab/switches.Set).
type Switches interface {
	CanSwitch() bool
	Fixed() string
	Off(name string) bool
	OffNow() []string
	Switch(name string, off bool) error
}

// ReplayTarget is what one replay sends again: exactly one of an order's
// order_paid (--order), one message of the outbox (--message) or the poison
// queue (--poison).
type ReplayTarget struct {
	OrderID   uuid.UUID `json:"order_id"`
	MessageID string    `json:"message_id"`
	Poison    bool      `json:"poison"`
}

//go:embed labpage
var labAssets embed.FS

// labRoutes mounts the lab page (GET /lab) and the endpoints it reads and
// acts through. Without a Lab (a production process) GET /lab says how to
// get one and nothing else is mounted.
func (s *server) labRoutes(r chi.Router) {
	if s.Lab == nil {
		r.Get("/lab", func(w http.ResponseWriter, req *http.Request) {
			s.labProblem(w, req, labError{http.StatusNotFound, "No lab page in this process",
				"the lab page is served by a dev run only: `orderpaid all`, or ORDERPAID_DEV=1 orderpaid api"})
		})
		return
	}
	r.Get("/lab", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, req, labAssets, "labpage/index.html")
	})
	r.Get("/lab/assets/{file}", func(w http.ResponseWriter, req *http.Request) {
		http.ServeFileFS(w, req, labAssets, "labpage/"+chi.URLParam(req, "file"))
	})
	r.Get("/lab/state", s.handleLabState)
	r.With(withOrderID).Get("/lab/orders/{id}/timeline", s.handleLabTimeline)

	// Every control answers the lab page on this machine only (see
	// requireLocalPage: a foreign Host or Origin is refused, DNS rebinding
	// included), and takes JSON only: a browser must ask before sending it
	// cross-site (see requireJSON), so no other web page can pull a lever.
	act := r.With(s.requireLocalPage, s.requireJSON(untypedRefused))
	act.With(withOrderID).Post("/lab/orders/{id}/redeliver", s.handleLabRedeliver)
	act.Post("/lab/providers/{provider}", s.handleLabProvider)
	act.Post("/lab/replay", s.handleLabReplay)
	act.Post("/lab/guards/{guard}", s.handleLabGuard)
	act.Post("/lab/faults/{point}", s.handleLabFault)
}

// labError is a refusal of a lab endpoint, with its status.
type labError struct {
	status        int
	title, detail string
}

func (e labError) Error() string { return e.title + ": " + e.detail }

// labProblem answers a labError as a problem detail with its own status, and
// hands anything else to problem, the API's one mapping of errors.
func (s *server) labProblem(w http.ResponseWriter, r *http.Request, err error) {
	var le labError
	if !errors.As(err, &le) {
		s.problem(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(le.status)
	_ = json.NewEncoder(w).Encode(Problem{Type: "about:blank", Title: le.title, Status: le.status, Detail: truncate(le.detail, maxDetail)})
}
