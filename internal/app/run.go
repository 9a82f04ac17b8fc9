package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// UsageError is a mistake on the command line: Main exits 2 for it.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// StatusError ends the process with an exit status of its own, for a
// command whose outcomes are more than succeeded or failed (reconcile's 3:
// settled, waiting for the worker).
type StatusError struct {
	Status int
	Err    error
}

func (e StatusError) Error() string { return e.Err.Error() }
func (e StatusError) Unwrap() error { return e.Err }

// ExitStatus is the exit status of a run that ended with err (not nil): 2
// for a UsageError, its own for a StatusError, 1 for any other.
func ExitStatus(err error) int {
	var ue UsageError
	var se StatusError
	switch {
	case errors.As(err, &ue):
		return 2
	case errors.As(err, &se):
		return se.Status
	}
	return 1
}

// Env is what every subcommand gets: the context, its arguments, the
// environment reader and the output streams.
type Env struct {
	Binary string // orderpaid or orderpaid-lab, for usage lines
	Ctx    context.Context
	Args   []string
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer
}

// Command is one subcommand: a line for the usage, and what it runs.
type Command struct {
	Summary string
	Run     func(e Env) error
}

// Commands are a binary's subcommands, by name.
type Commands map[string]Command

// Production is orderpaid's subcommands: the service and the operator's
// tools. lab is what orderpaid-lab adds to the serving ones (its flags,
// the fakes, the lab page); nil in production, where none of it is linked.
func Production(lab Lab) Commands {
	return Commands{
		"migrate":   {"apply the schema to DATABASE_URL (safe to run twice)", runMigrate},
		"api":       {"serve the HTTP API on HTTP_ADDR", func(e Env) error { return Serve(e, "api", Parts{API: true}, lab) }},
		"worker":    {"run the outbox relay and the consumers (order_paid, order_confirmed and the refunds)", func(e Env) error { return Serve(e, "worker", Parts{Worker: true}, lab) }},
		"backfill":  {"re-emit order_paid for paid orders in a time range (safe to run twice)", runBackfill},
		"reprocess": {"replay one order, one message or the poison queue through the same guards", runReprocess},
		"reconcile": {"hold every order against the providers' records and settle what is safe (a lost charge answer, a missed refund, a missing e-mail)", func(e Env) error { return runReconcile(e, lab) }},
		"retention": {"remove old inbox and execution log rows, and relayed or consumed messages (safe to run twice, and concurrently)", runRetention},
		"doctor":    {"check this machine's setup (Go, PostgreSQL, the broker, free ports) and say what to fix", runDoctor},
	}
}

// Main runs the binary named name with cmds: SIGINT and SIGTERM cancel its
// context, a mistake on the command line exits 2, an error that carries its
// own status (StatusError) exits with it, any other error exits 1.
func Main(name string, cmds Commands) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, name, cmds, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(ExitStatus(err))
	}
}

// Run is the whole program of the binary named binary: it parses the
// command line and runs one of cmds.
func Run(ctx context.Context, binary string, cmds Commands, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[1] == "-h" || args[1] == "--help" || args[1] == "help" {
		printUsage(stdout, binary, cmds)
		if len(args) < 2 {
			return UsageError{errors.New("no subcommand given")}
		}
		return nil
	}
	cmd, ok := cmds[args[1]]
	if !ok {
		printUsage(stderr, binary, cmds)
		return UsageError{fmt.Errorf("unknown subcommand %q%s", args[1], labHint(binary, args[1]))}
	}
	return schemaHint(cmd.Run(Env{Binary: binary, Ctx: ctx, Args: args[2:], Getenv: getenv, Stdout: stdout, Stderr: stderr}))
}

// labSubcommands are orderpaid-lab's own subcommands: asked of orderpaid,
// the error says where they are.
var labSubcommands = []string{"all", "bench", "crashmatrix", "demo", "fakes", "scenario", "soak"}

func labHint(binary, name string) string {
	if binary != "orderpaid" || !slices.Contains(labSubcommands, name) {
		return ""
	}
	return fmt.Sprintf(" here: it is the lab's, in orderpaid-lab (go run ./cmd/orderpaid-lab %s); orderpaid is the service and its operator's tools", name)
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

func printUsage(w io.Writer, binary string, cmds Commands) {
	names := make([]string, 0, len(cmds))
	for name := range cmds {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "usage: %s <subcommand> [flags]   (%s <subcommand> -h for its flags)\n", binary, binary)
	fmt.Fprintln(w, "\nsubcommands:")
	for _, name := range names {
		fmt.Fprintf(w, "  %-10s %s\n", name, cmds[name].Summary)
	}
	fmt.Fprintln(w, "\nenvironment: "+strings.Join(config.Variables, ", ")+", OTEL_* (see README.md)")
}

// parseFlags parses a subcommand's flags. -h prints the usage and returns
// flag.ErrHelp, which the caller turns into a clean exit; any other mistake
// is a UsageError (exit 2) naming the problem.
func ParseFlags(fs *flag.FlagSet, e Env, usage string) error {
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s %s %s\n", e.Binary, fs.Name(), usage)
		fs.PrintDefaults()
	}
	err := fs.Parse(e.Args)
	if errors.Is(err, flag.ErrHelp) {
		return flag.ErrHelp
	}
	if err != nil {
		return UsageError{err}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return UsageError{fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}

// loadConfig reads the environment and returns the config and a JSON logger.
func LoadConfig(e Env) (config.Config, *slog.Logger, error) {
	cfg, err := config.Load(e.Getenv)
	if err != nil {
		return config.Config{}, nil, UsageError{fmt.Errorf("configuration: %w", err)}
	}
	logger := slog.New(slog.NewJSONHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return cfg, logger, nil
}

// helpOK turns -h into a clean exit.
func HelpOK(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
