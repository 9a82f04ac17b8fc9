package app

import (
	"flag"
	"log/slog"
	"net/http"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Lab is what orderpaid-lab adds to orderpaid's serving processes and to
// reconcile: flags that switch guards off, arm fault points, crash at a
// boundary or shorten a lease; the fake providers; the lab page. orderpaid
// passes nil: its processes define none of these flags and link none of it
// (TestProductionLinksNoLab).
type Lab interface {
	// Flags defines the lab's flags of the process name, with parts p, on
	// fs. What it returns reads them once they are parsed; devRun says
	// whether the process may pull a lab lever (ORDERPAID_DEV=1, or a
	// process that runs the fakes).
	Flags(fs *flag.FlagSet, name string, p Parts) func(devRun bool) (Levers, error)
	// Fakes is the fake providers' handler, which sends the gateway's
	// webhooks to webhookURL signed with secret, and what closes it.
	Fakes(webhookURL string, secret []byte) (http.Handler, func())
}

// Levers is what the lab pulled in one process. The zero value is
// production's: every guard on, no fault armed, no lab page.
type Levers struct {
	// Spans watch the process's spans: the crash matrix's boundaries.
	Spans []sdktrace.SpanProcessor
	// Close ends what the levers opened (a boundary record).
	Close func()
	// Pool adjusts the database pool's configuration (a COMMIT's answer lost).
	Pool func(*pgxpool.Config)
	// Faults are the fault points armed.
	Faults *fault.Set
	// LockTimeout is the api's lease on a key and a charge (0: the default).
	LockTimeout time.Duration
	// GuardsOff names the guards switched off from the start, for the log.
	GuardsOff string
	// Ingestor, Payments and Consumers wire the guards' mistakes in.
	Ingestor  func(*webhook.Ingestor) *webhook.Ingestor
	Payments  func(*payment.Service) *payment.Service
	Consumers func(c *consumer.Consumers, direct message.Publisher) *consumer.Consumers
	// Inner are middlewares around each handler (a mistake's, the wrong fix).
	Inner func(logger watermill.LoggerAdapter) ([]message.HandlerMiddleware, error)
	// Batches hands a batch to one, a message at a time, when a guard is off.
	Batches func(batch func([]*message.Message) []error, one func(*message.Message) error) func([]*message.Message) []error
	// Page is the lab page the api mounts (GET /lab).
	Page func(PageParts) httpapi.LabPage
}

// PageParts is what a lab page is given of the process that serves it.
type PageParts struct {
	Process, Broker, FakesURL string
	Pool                      *pgxpool.Pool
	Logger                    *slog.Logger
}

func (l Levers) close() {
	if l.Close != nil {
		l.Close()
	}
}

func (l Levers) ingestor(in *webhook.Ingestor) *webhook.Ingestor {
	if l.Ingestor == nil {
		return in
	}
	return l.Ingestor(in)
}

func (l Levers) payments(p *payment.Service) *payment.Service {
	if l.Payments == nil {
		return p
	}
	return l.Payments(p)
}

func (l Levers) consumers(c *consumer.Consumers, direct message.Publisher) *consumer.Consumers {
	if l.Consumers == nil {
		return c
	}
	return l.Consumers(c, direct)
}

func (l Levers) inner(logger watermill.LoggerAdapter) ([]message.HandlerMiddleware, error) {
	if l.Inner == nil {
		return nil, nil
	}
	return l.Inner(logger)
}

func (l Levers) batches(batch func([]*message.Message) []error, one func(*message.Message) error) func([]*message.Message) []error {
	if l.Batches == nil {
		return batch
	}
	return l.Batches(batch, one)
}

func (l Levers) page(pp PageParts) httpapi.LabPage {
	if l.Page == nil {
		return nil // not a nil page of a concrete type: the API would take it for a page
	}
	return l.Page(pp)
}

// pull defines lab's flags on fs and returns what reads them: nothing at
// all without a lab.
func pull(lab Lab, fs *flag.FlagSet, name string, p Parts) func(devRun bool) (Levers, error) {
	if lab == nil {
		return func(bool) (Levers, error) { return Levers{}, nil }
	}
	return lab.Flags(fs, name, p)
}
