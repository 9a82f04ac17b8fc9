package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// usageError is a mistake on the command line: main exits 2 for it.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// statusError ends the process with an exit status of its own, for a
// command whose outcomes are more than succeeded or failed (reconcile's 3:
// settled, waiting for the worker).
type statusError struct {
	status int
	err    error
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }

// exitStatus is the exit status of a run that ended with err (not nil): 2
// for a usageError, its own for a statusError, 1 for any other.
func exitStatus(err error) int {
	var ue usageError
	var se statusError
	switch {
	case errors.As(err, &ue):
		return 2
	case errors.As(err, &se):
		return se.status
	}
	return 1
}

// env is what every subcommand gets: the context, its arguments, the
// environment reader and the output streams.
type env struct {
	ctx    context.Context
	args   []string
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

type subcommand struct {
	summary string
	run     func(e env) error
}

func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"migrate":     {"apply the schema to DATABASE_URL (safe to run twice)", runMigrate},
		"api":         {"serve the HTTP API on HTTP_ADDR", runAPI},
		"worker":      {"run the outbox relay and the consumers (order_paid, order_confirmed and the refunds)", runWorker},
		"fakes":       {"serve the fake payment gateway and notification provider on FAKES_ADDR", runFakes},
		"demo":        {"walk one order through a running `orderpaid all` and show each guard answer", runDemo},
		"all":         {"api + worker + fakes in one process: the no-Docker demo", runAll},
		"backfill":    {"re-emit order_paid for paid orders in a time range (safe to run twice)", runBackfill},
		"reprocess":   {"replay one order, one message or the poison queue through the same guards", runReprocess},
		"scenario":    {"list or run the duplication scenarios (scenario list | scenario run NAME | scenario run all)", runScenario},
		"reconcile":   {"hold every order against the providers' records and settle what is safe (a lost charge answer, a missed refund, a missing e-mail)", runReconcile},
		"retention":   {"remove old inbox and execution log rows, and relayed or consumed messages (safe to run twice, and concurrently)", runRetention},
		"bench":       {"measure the pipeline with real processes against its ceiling (see docs/performance.md)", runBench},
		"soak":        {"pay many orders while killing and restarting processes, then check every invariant", runSoak},
		"crashmatrix": {"crash the flow at every boundary a process can die at, recover, and check each effect once (see docs/crash-matrix.md)", runCrashMatrix},
		"doctor":      {"check this machine's setup (Go, PostgreSQL, the broker, free ports) and say what to fix", runDoctor},
	}
}

// run is the whole program: it parses the command line and runs one subcommand.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmds := subcommands()
	if len(args) < 2 || args[1] == "-h" || args[1] == "--help" || args[1] == "help" {
		printUsage(stdout, cmds)
		if len(args) < 2 {
			return usageError{errors.New("no subcommand given")}
		}
		return nil
	}
	cmd, ok := cmds[args[1]]
	if !ok {
		printUsage(stderr, cmds)
		return usageError{fmt.Errorf("unknown subcommand %q", args[1])}
	}
	return schemaHint(cmd.run(env{ctx: ctx, args: args[2:], getenv: getenv, stdout: stdout, stderr: stderr}))
}

// schemaHint says what to do when an error means the database has no schema
// yet (a table is missing): PostgreSQL's own message names the table, not
// the fix.
func schemaHint(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return fmt.Errorf("%w (is the schema applied? run `orderpaid migrate` with the same DATABASE_URL)", err)
	}
	return err
}

func printUsage(w io.Writer, cmds map[string]subcommand) {
	names := make([]string, 0, len(cmds))
	for name := range cmds {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: orderpaid <subcommand> [flags]   (orderpaid <subcommand> -h for its flags)")
	fmt.Fprintln(w, "\nsubcommands:")
	for _, name := range names {
		fmt.Fprintf(w, "  %-10s %s\n", name, cmds[name].summary)
	}
	fmt.Fprintln(w, "\nenvironment: "+strings.Join(config.Variables, ", ")+", OTEL_* (see README.md)")
}

// parseFlags parses a subcommand's flags. -h prints the usage and returns
// flag.ErrHelp, which the caller turns into a clean exit; any other mistake
// is a usageError (exit 2) naming the problem.
func parseFlags(fs *flag.FlagSet, e env, usage string) error {
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: orderpaid %s %s\n", fs.Name(), usage)
		fs.PrintDefaults()
	}
	err := fs.Parse(e.args)
	if errors.Is(err, flag.ErrHelp) {
		return flag.ErrHelp
	}
	if err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}

// loadConfig reads the environment and returns the config and a JSON logger.
func loadConfig(e env) (config.Config, *slog.Logger, error) {
	cfg, err := config.Load(e.getenv)
	if err != nil {
		return config.Config{}, nil, usageError{fmt.Errorf("configuration: %w", err)}
	}
	logger := slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return cfg, logger, nil
}

// helpOK turns -h into a clean exit.
func helpOK(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
