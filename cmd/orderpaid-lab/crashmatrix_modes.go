package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/crashmatrix"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
)

// discover is the clean run: the boundaries the flows of --flow meet, and
// their cells. With --list it prints the boundaries and returns no cells.
func (f *matrixFlags) discover(e env, runCfg scenario.Config) ([]crashmatrix.Cell, error) {
	fmt.Fprintln(e.Stderr, "crashmatrix: the clean run, to list every boundary the flow meets")
	all, err := crashmatrix.Discover(e.Ctx, runCfg)
	if err != nil {
		return nil, err
	}
	boundaries := crashmatrix.Select(all, f.flows()...)
	if f.list {
		for _, b := range boundaries {
			fmt.Fprintln(e.Stdout, b)
		}
		return nil, nil
	}
	var cells []crashmatrix.Cell
	candidates := crashmatrix.Cells(boundaries)
	if f.lost {
		candidates = crashmatrix.LostCells(boundaries)
	}
	for _, c := range candidates {
		if f.providers().Applies(c) {
			cells = append(cells, c)
		}
	}
	fmt.Fprintf(e.Stderr, "crashmatrix: %d boundaries, %d cells, %d at a time\n", len(boundaries), len(cells), runCfg.Parallel)
	return cells, nil
}

// write prints the cells' outcomes as the flags ask: JSON, Markdown, the
// pairs of a --then replay, or the table.
func (f *matrixFlags) write(e env, outcomes []crashmatrix.Outcome, flags string) error {
	switch {
	case f.asJSON:
		return crashmatrix.WriteJSON(e.Stdout, outcomes)
	case f.markdown:
		return crashmatrix.WriteMarkdown(e.Stdout, outcomes, ".")
	case f.then != "":
		return crashmatrix.WritePairs(e.Stdout, outcomes, flags)
	}
	return crashmatrix.WriteTable(e.Stdout, outcomes, flags)
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
