// Command orderpaid is one binary for everything this repository runs: the
// API, the worker (the outbox relay and the two consumers), the operator's
// tools (migrate, backfill, reprocess, retention) and the lab that
// demonstrates and measures the service (fakes, all, demo, scenario, bench,
// soak). Run `orderpaid -h` for the list of subcommands.
//
// main only hands the process to run (run.go): SIGINT and SIGTERM cancel its
// context, a mistake on the command line exits 2, an error that carries its
// own status (statusError) exits with it, any other error exits 1.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "orderpaid:", err)
		os.Exit(exitStatus(err))
	}
}
