package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/orderpaid/orderpaid/internal/ops/reconcile"
)

// ReconcileRun is one `orderpaid reconcile` the soak ran, as a child
// process like an operator's or a cron job's.
type ReconcileRun struct {
	// Name is its log's name (reconcile3), Phase when it ran.
	Name, Phase string
	Took        time.Duration
	// Exit is its exit status: 0, 1 while findings are left, or 3 while
	// what it settled waits for the worker (reconcile.ExitStatus).
	Exit int
	// Report is what it printed (--json); Err says why it could not run or
	// what it printed is not a report.
	Report reconcile.Report
	Err    error
}

// reconciler starts `orderpaid reconcile --json --grace G` processes
// against the soak's database and fakes, and keeps what each did.
type reconciler struct {
	bin, logDir string
	env         []string
	grace       time.Duration

	mu   sync.Mutex
	runs []ReconcileRun
}

// pair runs two reconcile at once and returns them.
func (r *reconciler) pair(ctx context.Context, phase string) []ReconcileRun {
	var wg sync.WaitGroup
	out := make([]ReconcileRun, 2)
	for i := range out {
		wg.Go(func() { out[i] = r.run(ctx, phase) })
	}
	wg.Wait()
	return out
}

// run runs one reconcile to its end.
func (r *reconciler) run(ctx context.Context, phase string) ReconcileRun {
	r.mu.Lock()
	run := ReconcileRun{Name: fmt.Sprintf("reconcile%d", len(r.runs)+1), Phase: phase}
	r.runs = append(r.runs, run) // a place, filled below
	at := len(r.runs) - 1
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.runs[at] = run
		r.mu.Unlock()
	}()
	logFile, err := os.Create(filepath.Join(r.logDir, run.Name+".log"))
	if err != nil {
		run.Err = err
		return run
	}
	defer logFile.Close()
	args := []string{"reconcile", "--json", "--grace", r.grace.String()}
	fmt.Fprintf(logFile, "$ orderpaid %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, r.bin, args...)
	var stdout bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = r.env, &stdout, logFile
	began := time.Now()
	err = cmd.Run()
	run.Took = time.Since(began)
	_, _ = logFile.Write(stdout.Bytes())
	run.Exit = -1
	if cmd.ProcessState != nil {
		run.Exit = cmd.ProcessState.ExitCode()
	}
	var exit *exec.ExitError
	switch {
	case err != nil && !(errors.As(err, &exit) && (run.Exit == reconcile.ExitLeft || run.Exit == reconcile.ExitWaiting)):
		run.Err = fmt.Errorf("%s: %w; see %s", run.Name, err, logFile.Name())
	default:
		if jerr := json.Unmarshal(stdout.Bytes(), &run.Report); jerr != nil {
			run.Err = fmt.Errorf("%s printed no report (%w); see %s", run.Name, jerr, logFile.Name())
		}
	}
	return run
}

// all returns the runs so far.
func (r *reconciler) all() []ReconcileRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ReconcileRun(nil), r.runs...)
}

// every runs a pair every period until ctx ends.
func (r *reconciler) every(ctx context.Context, period time.Duration) {
	for {
		pause(ctx, period)
		if ctx.Err() != nil {
			return
		}
		r.pair(context.WithoutCancel(ctx), "load")
	}
}
