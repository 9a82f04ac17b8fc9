package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/app"
	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/labpage"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/ops/reprocess"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// lab is what orderpaid-lab adds to orderpaid's processes (app.Lab).
type lab struct{}

// leverFlags are the lab's flags of one process, as parsed.
type leverFlags struct {
	name                                 string
	p                                    app.Parts
	faults, without, crashAt, boundaries string
	dedupe                               bool
	lease                                time.Duration
}

// Flags defines the lab's levers of the process name: the fakes have no
// guards and no fault points, and there these flags would be accepted and
// mean nothing, so they are not defined.
func (lab) Flags(fs *flag.FlagSet, name string, p app.Parts) func(devRun bool) (app.Levers, error) {
	f := &leverFlags{name: name, p: p}
	dev := " (needs " + config.DevVariable + "=1)"
	if p.API {
		fs.DurationVar(&f.lease, "lease", 0, "hold an Idempotency-Key and a charge attempt this long before another request may take it over (default "+payment.DefaultLockTimeout.String()+"); the crash matrix shortens it"+dev)
	}
	if p.API || p.Worker {
		fs.StringVar(&f.crashAt, "crash-at", "", "die at one boundary, process/flow/span#n[:before|after], as the crash matrix lists them (tests and the crash matrix only"+dev+")")
		fs.StringVar(&f.boundaries, "boundaries", "", "append every boundary this process meets to `file`, one per line (the crash matrix's clean run"+dev+")")
		fs.StringVar(&f.faults, "faults", "", "arm fault points, comma-separated name=error|crash|pause[:count] (pause: hold the step "+fault.PauseFor.String()+", then go on): "+strings.Join(app.FaultPoints(), ", ")+" (tests and scenarios only"+dev+")")
	}
	if p.API || p.Worker || name == "reconcile" {
		fs.StringVar(&f.without, "without", "", "switch guards off to watch the damage, comma-separated: "+strings.Join(switches.Names(), ", ")+" (workshop only"+dev+")")
	}
	if p.Worker {
		fs.BoolVar(&f.dedupe, "dedupe-executions", false, "skip a handler whose message id this process already saw: the classic WRONG fix, for the scenario execution-dedupe (workshop only"+dev+")")
	}
	return f.levers
}

// levers checks the flags and turns them into what the process is wired
// with. Outside a dev run (devRun: ORDERPAID_DEV=1, or `orderpaid-lab
// all`) every lever is refused: in a production process they would make
// effects happen twice, and a log warning is easy to miss.
func (f *leverFlags) levers(devRun bool) (app.Levers, error) {
	if f.lease != 0 && !devRun {
		return app.Levers{}, usageError{Err: fmt.Errorf("%s: --lease: a lab lever, refused in a production process: set %s=1", f.name, config.DevVariable)}
	}
	spans, pool, closeLog, err := watchBoundaries(f.name, devRun, f.crashAt, f.boundaries)
	if err != nil {
		return app.Levers{}, err
	}
	guards, faults, err := labLevers(f.name, devRun, f.without, f.faults, f.dedupe)
	if err != nil {
		closeLog()
		return app.Levers{}, err
	}
	// The lab page switches guards at run time only where one switch set
	// reaches the api's and the worker's guards: a dev run of both.
	if devRun && f.p.API && f.p.Worker {
		guards = guards.Live()
		if faults == nil {
			faults = fault.New(crashNow)
		}
	}
	lv := app.Levers{
		Spans: spans, Pool: pool, Close: closeLog, Faults: faults, LockTimeout: f.lease, GuardsOff: guards.Fixed(),
		Ingestor: func(in *webhook.Ingestor) *webhook.Ingestor { return switches.Ingestor(in, guards) },
		Payments: func(p *payment.Service) *payment.Service { return switches.Payments(p, guards) },
		Consumers: func(c *consumer.Consumers, direct message.Publisher) *consumer.Consumers {
			return switches.Consumers(c, guards, direct)
		},
		Batches: func(batch func([]*message.Message) []error, one func(*message.Message) error) func([]*message.Message) []error {
			return switches.Batches(guards, batch, one)
		},
		Inner: func(logger watermill.LoggerAdapter) ([]message.HandlerMiddleware, error) {
			return inner(guards, f.dedupe, logger)
		},
	}
	if devRun {
		lv.Page = func(pp app.PageParts) httpapi.LabPage { return labPage(pp, guards, faults) }
	}
	return lv, nil
}

// inner are the middlewares the levers put around each handler: the
// outbox's mistake needs one, and the wrong fix is one.
func inner(guards *switches.Set, dedupe bool, logger watermill.LoggerAdapter) ([]message.HandlerMiddleware, error) {
	var mws []message.HandlerMiddleware
	if guards != nil {
		mws = append(mws, switches.HoldWhileOutboxOff(guards)) // for the outbox's mistake
	}
	if dedupe {
		mw, err := switches.DedupeExecutions(0, logger)
		if err != nil {
			return nil, err
		}
		mws = append(mws, mw)
	}
	return mws, nil
}

// Fakes serves the fake payment gateway and notification provider.
func (lab) Fakes(webhookURL string, secret []byte) (http.Handler, func()) {
	gw := fakes.NewGateway(fakes.GatewayConfig{WebhookURL: webhookURL, WebhookSecret: secret})
	return fakes.New(gw, fakes.NewNotifier()), gw.Close
}

// labLevers turns --without (guards switched off) and --faults (fault
// points armed) into a switch set and a fault set. Each value is checked
// first; then, outside a dev run, any of them, and the wrong fix
// --dedupe-executions, is refused.
func labLevers(name string, devRun bool, without, faults string, dedupe bool) (*switches.Set, *fault.Set, error) {
	off, err := switches.Parse(without)
	if err != nil {
		return nil, nil, usageError{Err: fmt.Errorf("%s: --without: %w", name, err)}
	}
	armed, err := fault.Parse(faults, app.FaultPoints(), crashNow)
	if err != nil {
		return nil, nil, usageError{Err: fmt.Errorf("%s: --faults: %w", name, err)}
	}
	var pulled []string
	if off.Fixed() != "" {
		pulled = append(pulled, "--without "+off.Fixed())
	}
	if strings.TrimSpace(faults) != "" {
		pulled = append(pulled, "--faults "+faults)
	}
	if dedupe {
		pulled = append(pulled, "--dedupe-executions")
	}
	if len(pulled) > 0 && !devRun {
		return nil, nil, usageError{Err: fmt.Errorf("%s: %s: lab levers, refused in a production process (they let effects happen twice): "+
			"for a workshop, test or scenario run set %s=1", name, strings.Join(pulled, ", "), config.DevVariable)}
	}
	if !devRun {
		return nil, nil, nil
	}
	return off, armed, nil
}

// labPage is the lab page (GET /lab, internal/lab/labpage) of a dev run,
// which the API mounts. Its replays are `orderpaid reprocess`'s, on the
// process's own pool.
func labPage(pp app.PageParts, guards *switches.Set, faults *fault.Set) httpapi.LabPage {
	note := ""
	if !guards.CanSwitch() {
		note = "guards can be switched at run time only where the api and the worker share a process, and this " +
			pp.Process + " process has no worker: start workshop mode with `orderpaid-lab all`, or switch guards off at " +
			"start with ORDERPAID_DEV=1 and --without NAME on the api and the worker"
	}
	var points []string
	if guards.CanSwitch() { // the worker shares this process: the page may fail it
		points = app.FaultPoints()
	}
	pool := pp.Pool
	return labpage.New(labpage.Config{
		Process: pp.Process, Broker: pp.Broker, FakesURL: pp.FakesURL, Switches: guards, Faults: faults, GuardsNote: note, FaultPoints: points,
		Pool: pool, Logger: pp.Logger,
		Replay: func(ctx context.Context, t labpage.ReplayTarget, out io.Writer) error {
			opts := reprocess.Options{Out: out}
			switch {
			case t.Poison:
				_, err := reprocess.Poison(ctx, pool, opts)
				return err
			case t.MessageID != "":
				return reprocess.Message(ctx, pool, t.MessageID, opts)
			default:
				return reprocess.Order(ctx, pool, t.OrderID, opts)
			}
		},
	})
}
