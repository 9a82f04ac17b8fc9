package httpapi

import (
	"context"
	"net/http"
	"sort"
	"time"
)

// handleHealthz says the process is up; it checks nothing else.
func (s *server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz runs every readiness check (database, broker) and answers 503
// with the failing ones while any fails.
func (s *server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	names := make([]string, 0, len(s.Ready))
	for name := range s.Ready {
		names = append(names, name)
	}
	sort.Strings(names)
	checks := map[string]string{}
	status := http.StatusOK
	for _, name := range names {
		if err := s.Ready[name](ctx); err != nil {
			// The error names hosts and ports: the log gets it, the
			// unauthenticated caller only which check failed.
			s.Logger.WarnContext(r.Context(), "readiness check failed", "check", name, "err", err)
			checks[name] = "unavailable"
			status = http.StatusServiceUnavailable
			continue
		}
		checks[name] = "ok"
	}
	writeJSON(w, status, map[string]any{"ready": status == http.StatusOK, "checks": checks})
}
