package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/crashmatrix"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// matrixFlags are crashmatrix's flags, as parsed.
type matrixFlags struct {
	flow, brokerName, relay, without, then, only, bin                                     string
	batch, depth, parallel                                                                int
	forget, twice, late, lateRetry, never, lag, list, asJSON, markdown, every, keep, lost bool
}

func matrixFlagsOn(fs *flag.FlagSet) *matrixFlags {
	f := &matrixFlags{}
	fs.StringVar(&f.flow, "flow", "all", "the flows to crash: all, or one or more (comma-separated) of "+strings.Join(crashmatrix.FlowNames, ", "))
	fs.StringVar(&f.brokerName, "broker", "", "broker of the cells' processes: postgres, amqp, nats or kafka (default $BROKER, else postgres)")
	fs.IntVar(&f.batch, "batch", 1, "CONSUMER_BATCH_SIZE of the cells' workers (1: per message)")
	fs.StringVar(&f.relay, "relay", config.RelayPoll, "OUTBOX_RELAY of the cells' processes: poll, or logical (the relay from the WAL; needs wal_level = logical)")
	fs.StringVar(&f.without, "without", "", "switch guards off (comma-separated) and show where their damage appears: "+strings.Join(switches.Names(), ", "))
	fs.IntVar(&f.depth, "depth", 1, "1: one crash a cell; 2: then, for the payment and order_paid, a second crash at each boundary the recovery of each first one met (every pair; the count is printed)")
	fs.StringVar(&f.then, "then", "", "with --only BOUNDARY:side, a second crash BOUNDARY:side in the recovery of the first, as a depth-two replay line prints it")
	fs.StringVar(&f.only, "only", "", "run one boundary's cells, BOUNDARY (both sides) or BOUNDARY:before|after|lost, as the table's replay lines print it")
	fs.BoolVar(&f.forget, "forget-keys", false, "the gateway and the notification provider forget their idempotency keys once the process has died")
	fs.BoolVar(&f.twice, "two-events", false, "once the flow has recovered, the gateway sends the payment's event again under a new event id (a second order_paid for the same payment)")
	fs.BoolVar(&f.late, "late-webhook", false, "the gateway holds the payment's webhook until the client's retries have their answers")
	fs.BoolVar(&f.lateRetry, "late-retry", false, "a client without an answer comes back only once the webhook has paid the order (not with --late-webhook)")
	fs.BoolVar(&f.never, "webhook-never", false, "the gateway never sends the payment's webhook; once the cell has recovered, orderpaid reconcile runs once (not with --late-webhook or --late-retry)")
	fs.BoolVar(&f.lag, "search-lag", false, "the providers' search has not caught up with anything made in the cell: a look-up after the crash finds nothing (not with --forget-keys)")
	fs.BoolVar(&f.lost, "lost-answers", false, "instead of dying at each boundary, lose the answer of each COMMIT while the process lives on (the commit is durable, the process sees its connection break)")
	fs.BoolVar(&f.list, "list", false, "print the boundaries the clean run met and stop")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object per cell instead of the table")
	fs.BoolVar(&f.markdown, "markdown", false, "print the tables as Markdown, each boundary linked to its line of code (docs/crash-matrix.md is made with it)")
	fs.BoolVar(&f.every, "every-guard", false, "then run the matrix again with each guard off, and print the cells where its damage shows; fails if a guard shows none")
	fs.IntVar(&f.parallel, "parallel", 2, "cells run at once (each has its own database and ports)")
	fs.BoolVar(&f.keep, "keep", false, "keep every cell's database and logs (always kept for a failed one)")
	fs.StringVar(&f.bin, "bin", "", "the orderpaid-lab binary to start as child processes (default: this one)")
	return f
}

// check refuses flags that contradict each other or name nothing.
func (f *matrixFlags) check() error {
	refuse := func(format string, args ...any) error {
		return usageError{Err: fmt.Errorf("crashmatrix: "+format, args...)}
	}
	for _, flow := range f.flows() {
		if !slices.Contains(crashmatrix.FlowNames, flow) {
			return refuse("--flow %q: want all or one or more of %s, comma-separated", flow, strings.Join(crashmatrix.FlowNames, ", "))
		}
	}
	if f.every && f.without != "" {
		return refuse("--every-guard already switches each guard off; drop --without")
	}
	for _, g := range strings.Split(f.without, ",") {
		if f.without != "" && !slices.Contains(switches.Names(), g) {
			return refuse("--without %q: want one or more of %s, comma-separated", g, strings.Join(switches.Names(), ", "))
		}
	}
	switch {
	case f.lateRetry && f.late:
		return refuse("--late-retry and --late-webhook order the same two things the other way: choose one")
	case f.never && (f.late || f.lateRetry):
		return refuse("--webhook-never: there is no webhook to be late or to wait for; drop --late-webhook and --late-retry")
	case f.lag && f.forget:
		return refuse("--search-lag with --forget-keys leaves the providers nothing to remember a call by: run them apart")
	case f.lost && f.depth != 1:
		return refuse("--lost-answers: a lost answer kills nothing, so there is no restart to crash again in; drop --depth")
	case f.depth != 1 && f.depth != 2:
		return refuse("--depth %d: want 1 or 2", f.depth)
	case f.then != "" && (f.only == "" || !strings.HasSuffix(f.then, ":"+string(fault.Before)) && !strings.HasSuffix(f.then, ":"+string(fault.After))):
		return refuse("--then BOUNDARY:before|after goes with --only BOUNDARY:before|after")
	case f.relay != config.RelayPoll && f.relay != config.RelayLogical:
		return refuse("--relay %q: want %s or %s", f.relay, config.RelayPoll, config.RelayLogical)
	case f.batch < 1 || f.parallel < 1 || f.parallel > 16:
		return refuse("--batch must be at least 1 and --parallel 1 to 16")
	}
	return nil
}

// flows are the flows --flow names; nil for all.
func (f *matrixFlags) flows() []string {
	if f.flow == "all" {
		return nil
	}
	return strings.Split(f.flow, ",")
}

// onlyCells are the cells --only names (with --then's second crash), or nil.
func (f *matrixFlags) onlyCells() ([]crashmatrix.Cell, error) {
	if f.only == "" {
		return nil, nil
	}
	boundary, side := f.only, fault.When("")
	if i := strings.LastIndex(f.only, ":"); i > 0 {
		boundary, side = f.only[:i], fault.When(f.only[i+1:])
		if side != fault.Before && side != fault.After && (side != fault.Lost || !fault.IsCommit(boundary)) {
			return nil, usageError{Err: fmt.Errorf("crashmatrix: --only %q: want BOUNDARY, BOUNDARY:before or BOUNDARY:after (a COMMIT's also BOUNDARY:lost)", f.only)}
		}
	}
	if side == fault.Lost {
		return crashmatrix.LostCells([]string{boundary}), nil
	}
	var cells []crashmatrix.Cell
	for _, c := range crashmatrix.Cells([]string{boundary}) {
		if side == "" || c.Side == side {
			c.Then = f.then
			cells = append(cells, c)
		}
	}
	return cells, nil
}

// setBatch gives the cells' processes --batch and --relay and returns the
// flags a replay line repeats (the broker's, the batch's, the relay's).
func (f *matrixFlags) setBatch(runCfg scenario.Config) (flags string) {
	if f.relay == config.RelayLogical {
		runCfg.Env["OUTBOX_RELAY"] = f.relay
		flags += " --relay " + f.relay
	}
	if runCfg.Broker != config.BrokerPostgres {
		flags += " --broker " + runCfg.Broker
	}
	if f.batch > 1 {
		runCfg.Env["CONSUMER_BATCH_SIZE"] = strconv.Itoa(f.batch)
		flags += " --batch " + strconv.Itoa(f.batch)
	}
	return flags
}

func (f *matrixFlags) providers() crashmatrix.Providers {
	return crashmatrix.Providers{Forget: f.forget, LateWebhook: f.late, TwoEvents: f.twice, SearchLag: f.lag, LateRetry: f.lateRetry, NoWebhook: f.never}
}

// runCrashMatrix is `orderpaid-lab crashmatrix`: a clean run lists every
// boundary, then each is crashed at, recovered from and checked
// (internal/lab/crashmatrix).
func runCrashMatrix(e env) error {
	fs := flag.NewFlagSet("crashmatrix", flag.ContinueOnError)
	f := matrixFlagsOn(fs)
	if err := parseFlags(fs, e, "[flags]"); err != nil {
		return helpOK(err)
	}
	if err := f.check(); err != nil {
		return err
	}
	only, err := f.onlyCells()
	if err != nil {
		return err
	}
	cfg, _, err := loadConfig(e)
	if err != nil {
		return err
	}
	runCfg, err := scenarioConfig(e, cfg, f.brokerName, f.bin, f.keep, f.parallel)
	if err != nil {
		return err
	}
	flags := f.setBatch(runCfg)
	stopKafka, err := inProcessKafka(e, "crashmatrix", "the cells", runCfg)
	if err != nil {
		return err
	}
	defer stopKafka()
	start, cells := time.Now(), only
	if only == nil {
		if cells, err = f.discover(e, runCfg); err != nil || cells == nil {
			return err // nil cells: --list printed the boundaries
		}
	}
	p := f.providers()
	flags += p.Flags()
	outcomes := crashmatrix.Run(e.Ctx, runCfg, cells, f.without, p)
	if err := f.write(e, outcomes, flags); err != nil {
		return err
	}
	summary := crashmatrix.Summary(outcomes, time.Since(start))
	fmt.Fprintln(e.Stdout, "\n"+summary)
	if f.depth == 1 && only == nil && !f.lost {
		fmt.Fprintf(e.Stdout, "depth two (--depth 2) would add %d pairs\n", len(crashmatrix.Pairs(outcomes, crashmatrix.DepthTwoFlows...)))
	}
	var failed error
	if f.without == "" && slices.ContainsFunc(outcomes, crashmatrix.Failed) {
		failed = fmt.Errorf("crashmatrix: %s", summary) // a guard off is expected to break cells: its table is the answer
	}
	if f.depth == 2 {
		failed = errors.Join(failed, crashMatrixDepthTwo(e, runCfg, outcomes, f.without, p, flags, f.asJSON))
	}
	if f.every {
		return errors.Join(failed, crashMatrixGuards(e, runCfg, cells, p, f.markdown))
	}
	return failed
}
