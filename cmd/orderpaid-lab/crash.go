package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/orderpaid/orderpaid/internal/lab/netfault"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// crashNow ends the process at once, with no deferred cleanup, as a SIGKILL
// or a power cut would. Only a fault point armed with mode "crash" calls it.
func crashNow() { os.Exit(137) }

// watchBoundaries returns the crash matrix's span processor for --crash-at
// and --boundaries (fault.Boundaries), or none, and what the pool needs for
// a COMMIT's answer to be lost (--crash-at ...COMMIT#n:lost). Both are lab
// levers: a production process refuses them.
func watchBoundaries(name string, devRun bool, crashAt, logPath string) (_ []sdktrace.SpanProcessor, pool func(*pgxpool.Config), closeLog func(), err error) {
	closeLog = func() {}
	if crashAt == "" && logPath == "" {
		return nil, nil, closeLog, nil
	}
	if !devRun {
		return nil, nil, closeLog, usageError{Err: fmt.Errorf("%s: --crash-at, --boundaries: lab levers, refused in a production process: "+
			"for a test or the crash matrix set %s=1", name, config.DevVariable)}
	}
	var record io.Writer
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, closeLog, usageError{Err: fmt.Errorf("%s: --boundaries: %w", name, err)}
		}
		record, closeLog = f, func() { f.Close() }
	}
	b := fault.NewBoundaries(name, record)
	if crashAt != "" {
		if err := b.CrashAt(crashAt, crashNow); err != nil {
			closeLog()
			return nil, nil, func() {}, usageError{Err: fmt.Errorf("%s: --crash-at: %w", name, err)}
		}
		if strings.HasSuffix(crashAt, ":"+string(fault.Lost)) {
			pool = func(cfg *pgxpool.Config) { netfault.LoseAnswers(cfg, b.LoseAnswer) }
		}
	}
	return []sdktrace.SpanProcessor{b}, pool, closeLog, nil
}
