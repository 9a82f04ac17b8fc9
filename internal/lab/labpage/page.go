package labpage

import (
	"log/slog"

	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Page is the lab page of one process. It serves nothing by itself: Mount
// adds its routes to the API's router.
type Page struct {
	Config
	q  *queries.Queries    // the service's: order.Get
	lq *labqueries.Queries // the page's own (sql/lab/lab_page.sql)
}

// New returns the lab page that cfg describes.
func New(cfg Config) *Page {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Page{Config: cfg, q: queries.New(cfg.Pool), lq: labqueries.New(cfg.Pool)}
}

// The API adds the page's routes through httpapi.Deps.Lab.
var _ httpapi.LabPage = (*Page)(nil)
