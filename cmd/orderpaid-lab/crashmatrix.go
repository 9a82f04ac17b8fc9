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

// runCrashMatrix is `orderpaid-lab crashmatrix`: a clean run lists every
// boundary, then each is crashed at, recovered from and checked
// (internal/lab/crashmatrix).
func runCrashMatrix(e env) error {
	fs := flag.NewFlagSet("crashmatrix", flag.ContinueOnError)
	flow := fs.String("flow", "all", "the flow to crash: all, or one of "+strings.Join(crashmatrix.FlowNames, ", "))
	brokerName := fs.String("broker", "", "broker of the cells' processes: postgres, amqp, nats or kafka (default $BROKER, else postgres)")
	batch := fs.Int("batch", 1, "CONSUMER_BATCH_SIZE of the cells' workers (1: per message)")
	without := fs.String("without", "", "switch guards off (comma-separated) and show where their damage appears: "+strings.Join(switches.Names(), ", "))
	depth := fs.Int("depth", 1, "1: one crash a cell; 2: then, for the payment and order_paid, a second crash at each boundary the recovery of each first one met (every pair; the count is printed)")
	then := fs.String("then", "", "with --only BOUNDARY:side, a second crash BOUNDARY:side in the recovery of the first, as a depth-two replay line prints it")
	only := fs.String("only", "", "run one boundary's cells, BOUNDARY (both sides) or BOUNDARY:before|after, as the table's replay lines print it")
	forget := fs.Bool("forget-keys", false, "the gateway and the notification provider forget their idempotency keys once the process has died")
	twice := fs.Bool("two-events", false, "once the flow has recovered, the gateway sends the payment's event again under a new event id (a second order_paid for the same payment)")
	late := fs.Bool("late-webhook", false, "the gateway holds the payment's webhook until the client's retries have their answers")
	lateRetry := fs.Bool("late-retry", false, "a client without an answer comes back only once the webhook has paid the order (not with --late-webhook)")
	lag := fs.Bool("search-lag", false, "the providers' search has not caught up with anything made in the cell: a look-up after the crash finds nothing (not with --forget-keys)")
	list := fs.Bool("list", false, "print the boundaries the clean run met and stop")
	asJSON := fs.Bool("json", false, "print one JSON object per cell instead of the table")
	markdown := fs.Bool("markdown", false, "print the tables as Markdown, each boundary linked to its line of code (docs/crash-matrix.md is made with it)")
	everyGuard := fs.Bool("every-guard", false, "then run the matrix again with each guard off, and print the cells where its damage shows; fails if a guard shows none")
	parallel := fs.Int("parallel", 2, "cells run at once (each has its own database and ports)")
	keep := fs.Bool("keep", false, "keep every cell's database and logs (always kept for a failed one)")
	bin := fs.String("bin", "", "the orderpaid binary to start as child processes (default: this one)")
	if err := parseFlags(fs, e, "[flags]"); err != nil {
		return helpOK(err)
	}
	if *flow != "all" && !slices.Contains(crashmatrix.FlowNames, *flow) {
		return usageError{Err: fmt.Errorf("crashmatrix: --flow %q: want all or one of %s", *flow, strings.Join(crashmatrix.FlowNames, ", "))}
	}
	if *everyGuard && *without != "" {
		return usageError{Err: errors.New("crashmatrix: --every-guard already switches each guard off; drop --without")}
	}
	for _, g := range strings.Split(*without, ",") {
		if *without != "" && !slices.Contains(switches.Names(), g) {
			return usageError{Err: fmt.Errorf("crashmatrix: --without %q: want one or more of %s, comma-separated", g, strings.Join(switches.Names(), ", "))}
		}
	}
	if *lateRetry && *late {
		return usageError{Err: errors.New("crashmatrix: --late-retry and --late-webhook order the same two things the other way: choose one")}
	}
	if *lag && *forget {
		return usageError{Err: errors.New("crashmatrix: --search-lag with --forget-keys leaves the providers nothing to remember a call by: run them apart")}
	}
	if *depth != 1 && *depth != 2 {
		return usageError{Err: fmt.Errorf("crashmatrix: --depth %d: want 1 or 2", *depth)}
	}
	if *then != "" && (*only == "" || !strings.HasSuffix(*then, ":"+string(fault.Before)) && !strings.HasSuffix(*then, ":"+string(fault.After))) {
		return usageError{Err: errors.New("crashmatrix: --then BOUNDARY:before|after goes with --only BOUNDARY:before|after")}
	}
	if *batch < 1 || *parallel < 1 || *parallel > 16 {
		return usageError{Err: errors.New("crashmatrix: --batch must be at least 1 and --parallel 1 to 16")}
	}
	var onlyCells []crashmatrix.Cell
	if *only != "" {
		boundary, side := *only, fault.When("")
		if i := strings.LastIndex(*only, ":"); i > 0 {
			boundary, side = (*only)[:i], fault.When((*only)[i+1:])
			if side != fault.Before && side != fault.After {
				return usageError{Err: fmt.Errorf("crashmatrix: --only %q: want BOUNDARY, BOUNDARY:before or BOUNDARY:after", *only)}
			}
		}
		for _, c := range crashmatrix.Cells([]string{boundary}) {
			if side == "" || c.Side == side {
				c.Then = *then
				onlyCells = append(onlyCells, c)
			}
		}
	}
	cfg, _, err := loadConfig(e)
	if err != nil {
		return err
	}
	runCfg, err := scenarioConfig(e, cfg, *brokerName, *bin, *keep, *parallel)
	if err != nil {
		return err
	}
	flags := ""
	if runCfg.Broker != config.BrokerPostgres {
		flags += " --broker " + runCfg.Broker
	}
	if *batch > 1 {
		runCfg.Env["CONSUMER_BATCH_SIZE"] = strconv.Itoa(*batch)
		flags += " --batch " + strconv.Itoa(*batch)
	}
	stopKafka, err := inProcessKafka(e, "crashmatrix", "the cells", runCfg)
	if err != nil {
		return err
	}
	defer stopKafka()

	start := time.Now()
	var cells []crashmatrix.Cell
	if onlyCells != nil {
		cells = onlyCells
	} else {
		fmt.Fprintln(e.Stderr, "crashmatrix: the clean run, to list every boundary the flow meets")
		all, err := crashmatrix.Discover(e.Ctx, runCfg)
		if err != nil {
			return err
		}
		var flows []string
		if *flow != "all" {
			flows = []string{*flow}
		}
		boundaries := crashmatrix.Select(all, flows...)
		if *list {
			for _, b := range boundaries {
				fmt.Fprintln(e.Stdout, b)
			}
			return nil
		}
		cells = crashmatrix.Cells(boundaries)
		fmt.Fprintf(e.Stderr, "crashmatrix: %d boundaries, %d cells, %d at a time\n", len(boundaries), len(cells), runCfg.Parallel)
	}
	providers := crashmatrix.Providers{Forget: *forget, LateWebhook: *late, TwoEvents: *twice, SearchLag: *lag, LateRetry: *lateRetry}
	flags += providers.Flags()
	outcomes := crashmatrix.Run(e.Ctx, runCfg, cells, *without, providers)
	switch {
	case *asJSON:
		err = crashmatrix.WriteJSON(e.Stdout, outcomes)
	case *markdown:
		err = crashmatrix.WriteMarkdown(e.Stdout, outcomes, ".")
	case *then != "":
		err = crashmatrix.WritePairs(e.Stdout, outcomes, flags)
	default:
		err = crashmatrix.WriteTable(e.Stdout, outcomes, flags)
	}
	if err != nil {
		return err
	}
	summary := crashmatrix.Summary(outcomes, time.Since(start))
	fmt.Fprintln(e.Stdout, "\n"+summary)
	if *depth == 1 && onlyCells == nil {
		fmt.Fprintf(e.Stdout, "depth two (--depth 2) would add %d pairs\n", len(crashmatrix.Pairs(outcomes, crashmatrix.DepthTwoFlows...)))
	}
	var failed error
	if *without == "" && slices.ContainsFunc(outcomes, crashmatrix.Failed) {
		failed = fmt.Errorf("crashmatrix: %s", summary) // a guard off is expected to break cells: its table is the answer
	}
	if *depth == 2 {
		failed = errors.Join(failed, crashMatrixDepthTwo(e, runCfg, outcomes, *without, providers, flags, *asJSON))
	}
	if *everyGuard {
		return errors.Join(failed, crashMatrixGuards(e, runCfg, cells, providers, *markdown))
	}
	return failed
}

// crashMatrixDepthTwo is --depth 2: every first crash of the payment and
// order_paid again, with a second crash at each boundary its recovery met.
func crashMatrixDepthTwo(e env, runCfg scenario.Config, first []crashmatrix.Outcome, without string, p crashmatrix.Providers, flags string, asJSON bool) error {
	start := time.Now()
	pairs := crashmatrix.Pairs(first, crashmatrix.DepthTwoFlows...)
	fmt.Fprintf(e.Stderr, "crashmatrix: depth two: %d pairs (%s: each first crash, then each side of each boundary its recovery met)\n",
		len(pairs), strings.Join(crashmatrix.DepthTwoFlows, " and "))
	outcomes := crashmatrix.Run(e.Ctx, runCfg, pairs, without, p)
	fmt.Fprintln(e.Stdout)
	var err error
	if asJSON {
		err = crashmatrix.WriteJSON(e.Stdout, outcomes)
	} else {
		err = crashmatrix.WritePairs(e.Stdout, outcomes, flags)
	}
	if err != nil {
		return err
	}
	summary := crashmatrix.Summary(outcomes, time.Since(start))
	fmt.Fprintln(e.Stdout, "\ndepth two: "+summary)
	if without == "" && slices.ContainsFunc(outcomes, crashmatrix.Failed) {
		return fmt.Errorf("crashmatrix: depth two: %s", summary)
	}
	return nil
}

// crashMatrixGuards is --every-guard: the cells again with each guard off,
// and the damage each showed.
func crashMatrixGuards(e env, runCfg scenario.Config, cells []crashmatrix.Cell, p crashmatrix.Providers, markdown bool) error {
	start := time.Now()
	guards := switches.Names()
	by := crashmatrix.RunGuards(e.Ctx, runCfg, cells, guards, p)
	fmt.Fprintln(e.Stdout)
	if markdown {
		if err := crashmatrix.WriteDamageMarkdown(e.Stdout, by, guards, p); err != nil {
			return err
		}
	} else {
		for _, g := range guards {
			if len(by[g]) == 0 {
				continue
			}
			fmt.Fprintf(e.Stdout, "\nwithout %s (%s):\n", by[g][0].Without, crashmatrix.GuardProviders(g, p))
			if err := crashmatrix.WriteTable(e.Stdout, by[g], crashmatrix.GuardProviders(g, p).Flags()); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(e.Stdout, "\n%d guards off, %d cells each, in %s\n", len(guards), len(cells), time.Since(start).Round(time.Second))
	if none := crashmatrix.Undamaged(by, guards); len(none) > 0 {
		return fmt.Errorf("crashmatrix: with each guard off, no cell showed the damage of %s: the matrix does not show what it protects", strings.Join(none, ", "))
	}
	return nil
}
