// Command orderpaid-lab is orderpaid with the lab: the service's
// subcommands, whose api and worker here also take the lab's levers
// (--without switches a guard off, --faults arms a fault point, --crash-at
// dies at a boundary), and the lab's own: the fake providers (fakes), the
// whole flow in one process (all), the demo, the scenarios, the crash
// matrix, the bench and the soak. Production runs cmd/orderpaid, which
// links none of it. Run `orderpaid-lab -h` for the list.
package main

import (
	"context"
	"io"

	"github.com/orderpaid/orderpaid/internal/app"
)

func main() { app.Main("orderpaid-lab", commands()) }

// commands are orderpaid's, with the lab's levers, and the lab's own.
func commands() app.Commands {
	cmds := app.Production(lab{})
	for name, c := range map[string]app.Command{
		"fakes":       {Summary: "serve the fake payment gateway and notification provider on FAKES_ADDR", Run: runFakes},
		"all":         {Summary: "api + worker + fakes in one process: the no-Docker demo", Run: runAll},
		"demo":        {Summary: "walk one order through a running `orderpaid-lab all` and show each guard answer", Run: runDemo},
		"scenario":    {Summary: "list or run the duplication scenarios (scenario list | scenario run NAME | scenario run all)", Run: runScenario},
		"bench":       {Summary: "measure the pipeline with real processes against its ceiling (see docs/performance.md)", Run: runBench},
		"soak":        {Summary: "pay many orders while killing and restarting processes, then check every invariant", Run: runSoak},
		"crashmatrix": {Summary: "crash the flow at every boundary a process can die at, recover, and check each effect once (see docs/crash-matrix.md)", Run: runCrashMatrix},
	} {
		cmds[name] = c
	}
	return cmds
}

func runFakes(e env) error { return app.Serve(e, "fakes", app.Parts{Fakes: true}, lab{}) }
func runAll(e env) error {
	return app.Serve(e, "all", app.Parts{API: true, Worker: true, Fakes: true}, lab{})
}

// run is the whole program, as main runs it: the tests call it in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return app.Run(ctx, "orderpaid-lab", commands(), args, getenv, stdout, stderr)
}

// The wiring's names, as the lab's subcommands use them.
type (
	env        = app.Env
	usageError = app.UsageError
)

var (
	parseFlags = app.ParseFlags
	loadConfig = app.LoadConfig
	helpOK     = app.HelpOK
	withPool   = app.WithPool
)
