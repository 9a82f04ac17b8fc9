package crashmatrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/scenario"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// Outcome is one cell's result.
type Outcome struct {
	Cell    Cell
	Without string
	// Held: every effect once after recovery. Damage says otherwise, in
	// words ("charges=2 (want 1)", or why the cell could not run).
	Held   bool
	Damage []string
	// NotReached: the process never met the boundary (ErrNotReached). With
	// a guard off that is its statement skipped, not a damage.
	NotReached bool
	// SecondNotReached: at depth two, the restarted process did not meet
	// the second boundary this time; the pair is counted apart.
	SecondNotReached bool
	// Answers are the guards that answered already_applied during the
	// recovery: what absorbed the repeat ("state_check"). None: nothing
	// was done twice to stop.
	Answers []string
	// Reconciled: orderpaid reconcile, run once by the cell's operator
	// (Providers.NoWebhook), settled something of it.
	Reconciled bool
	Counts     scenario.Counts
	Elapsed    time.Duration
	LogDir     string
	// Recovery are the boundaries of the cell's flow that its restarted
	// process met in the recovery (the second crashes of depth two).
	Recovery []string
	// Above: the cell ran with a guard of Beneath and the guard above it
	// off, and the guard above alone damaged it too: the damage is not the
	// guard's own.
	Above bool
}

// Run runs cells (with guard without off, "" for none), cfg.Parallel at a
// time, and returns their outcomes in order. cfg.Progress gets a line per
// cell ended, with the elapsed time and an estimate of what is left.
func Run(ctx context.Context, cfg scenario.Config, cells []Cell, without string, p Providers) []Outcome {
	dir, err := os.MkdirTemp(cfg.LogDir, "orderpaid-crashmatrix-")
	if err != nil {
		dir = os.TempDir()
	}
	defer os.RemoveAll(dir)
	cases := make([]scenario.Case, len(cells))
	answers := make([]string, len(cells))
	for i, c := range cells {
		answers[i] = filepath.Join(dir, fmt.Sprintf("cell-%d", i))
		cases[i] = scenario.Case{Scenario: c.Scenario(without, p, answers[i]), Without: without}
	}
	if cfg.Progress != nil {
		cfg.Progress = &progress{w: cfg.Progress, start: time.Now()}
	}
	results := scenario.Run(ctx, cfg, cases)
	for i, r := range results {
		if r.Err != nil && strings.Contains(r.Err.Error(), "address already in use") {
			// Another process bound the port the stage picked for a child
			// before the child did: the harness's race, not the flow's. The
			// cell runs again in a new world.
			os.Remove(answers[i])
			results[i] = scenario.RunOne(ctx, cfg, cases[i])
		}
	}
	out := make([]Outcome, len(cells))
	for i, r := range results {
		d := Damage(r, p, cells[i].Refunds())
		out[i] = Outcome{Cell: cells[i], Without: without, Held: len(d) == 0, Damage: d, Answers: Answers(answers[i]), Reconciled: Reconciled(answers[i]),
			NotReached: errors.Is(r.Err, ErrNotReached), SecondNotReached: errors.Is(r.Err, ErrSecondNotReached),
			Recovery: Recovery(answers[i], cells[i].Process(), cells[i].Flow()),
			Counts:   r.Counts, Elapsed: r.Elapsed, LogDir: r.LogDir}
	}
	return out
}

// RunGuards runs cells once with each of guards switched off, one guard
// after the other, under the guard's providers (GuardProviders), and
// returns the outcomes by guard. A guard of Beneath whose run damaged no
// cell runs again with the guard above it off too; its outcomes are then
// that run's, each cell the guard above damaged alone marked Above.
func RunGuards(ctx context.Context, cfg scenario.Config, cells []Cell, guards []string, p Providers) map[string][]Outcome {
	by := map[string][]Outcome{}
	for i, g := range guards {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "crashmatrix: guard %d of %d off: %s\n", i+1, len(guards), g)
		}
		by[g] = Run(ctx, cfg, cells, g, GuardProviders(g, p))
	}
	for _, g := range guards {
		above, ok := Beneath[g]
		if !ok || slices.ContainsFunc(by[g], Damaged) || by[above] == nil {
			continue
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "crashmatrix: %s damaged nothing alone; off again with %s, the guard above it\n", g, above)
		}
		both := Run(ctx, cfg, cells, g+","+above, GuardProviders(g, p))
		for i := range both {
			both[i].Above = Damaged(by[above][i])
		}
		by[g] = both
	}
	return by
}

// Damaged reports whether o's cell shows a guard's damage: it did not hold,
// its process met the boundary, and, with the guard above off too, the
// guard above alone did not damage it.
func Damaged(o Outcome) bool { return !o.Held && !o.NotReached && !o.Above }

// Undamaged lists the guards of by whose switching off damaged no cell: the
// matrix does not show what they protect (or misses a boundary).
func Undamaged(by map[string][]Outcome, guards []string) []string {
	var out []string
	for _, g := range guards {
		if !slices.ContainsFunc(by[g], Damaged) {
			out = append(out, g)
		}
	}
	return out
}

// progress adds the elapsed time and an estimate of the time left to the
// runner's "[n/N] cell: verdict (1.2s)" lines.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

var doneLine = regexp.MustCompile(`^\[(\d+)/(\d+)\] .*\(\d+\.\ds\)`)

func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := strings.TrimRight(string(b), "\n")
	if m := doneLine.FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[1])
		total, _ := strconv.Atoi(m[2])
		elapsed := time.Since(p.start)
		left := time.Duration(float64(elapsed) / float64(n) * float64(total-n))
		line += fmt.Sprintf(" [elapsed %s, about %s left]", elapsed.Round(time.Second), left.Round(time.Second))
	}
	_, err := fmt.Fprintln(p.w, line)
	return len(b), err
}

// WriteTable prints one row per boundary, a column per side: "held", or the
// damage. Below it, the command that replays each failing cell alone, with
// flags (the broker and mode the matrix ran on, "--broker amqp").
func WriteTable(w io.Writer, outcomes []Outcome, flags string) error {
	type row struct {
		flow, boundary string
		sides          map[fault.When]string
	}
	var rows []*row
	index := map[string]*row{}
	var replay []string
	for _, o := range outcomes {
		r := index[o.Cell.Boundary]
		if r == nil {
			r = &row{flow: o.Cell.Flow(), boundary: o.Cell.Boundary, sides: map[fault.When]string{}}
			index[o.Cell.Boundary] = r
			rows = append(rows, r)
		}
		r.sides[o.Cell.Side] = Verdict(o)
		if !o.Held {
			r.sides[o.Cell.Side] = strings.Join(o.Damage, ", ")
			replay = append(replay, ReplayCommand(o)+flags)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	lost := lostAnswers(outcomes)
	if lost {
		fmt.Fprintln(tw, "FLOW\tCOMMIT\tITS ANSWER LOST, THE PROCESS ALIVE")
	} else {
		fmt.Fprintln(tw, "FLOW\tBOUNDARY\tDIES BEFORE\tDIES AFTER")
	}
	for _, r := range rows {
		if lost {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.flow, r.boundary, r.sides[fault.Lost])
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.flow, r.boundary, r.sides[fault.Before], orDash(r.sides[fault.After]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range replay {
		fmt.Fprintln(w, "replay:", c)
	}
	return nil
}

// lostAnswers reports whether outcomes are the cells of a COMMIT's lost
// answer (LostCells), whose tables have their one side as a column.
func lostAnswers(outcomes []Outcome) bool {
	return slices.ContainsFunc(outcomes, func(o Outcome) bool { return o.Cell.Side == fault.Lost })
}

// WritePairs prints the depth-two cells, one line each: the first crash,
// the second (in the recovery of the first) and the verdict; below it the
// command that replays each failing pair alone. A pair whose second
// boundary the recovery did not meet this time is counted, not failed.
func WritePairs(w io.Writer, outcomes []Outcome, flags string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FLOW\tFIRST CRASH\tTHEN, IN ITS RECOVERY\tVERDICT")
	var replay []string
	for _, o := range outcomes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", o.Cell.Flow(), o.Cell, o.Cell.Then, Verdict(o))
		if !o.Held && !o.SecondNotReached {
			replay = append(replay, ReplayCommand(o)+flags)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range replay {
		fmt.Fprintln(w, "replay:", c)
	}
	return nil
}

// Failed reports whether o fails the matrix with every guard on: it did
// not hold, and it is not a pair whose second boundary was not met.
func Failed(o Outcome) bool { return !o.Held && !o.SecondNotReached }

// Verdict is o's cell in the table: "held: state_check", naming each guard
// that answered already_applied in the recovery; "held" when none had to
// (what the dead process did was rolled back, or not yet done, and was done
// once after it); "held by reconcile" when the cell's operator's
// orderpaid reconcile settled it (Providers.NoWebhook); or the damage.
func Verdict(o Outcome) string {
	switch {
	case o.SecondNotReached:
		return "second not reached"
	case o.NotReached && o.Without != "":
		return "not reached"
	case o.Above:
		return "as without " + Beneath[strings.Split(o.Without, ",")[0]]
	case !o.Held:
		return strings.Join(o.Damage, ", ")
	}
	held := "held"
	if o.Reconciled {
		held = "held by reconcile"
	}
	if len(o.Answers) == 0 {
		return held
	}
	return held + ": " + strings.Join(o.Answers, ", ")
}

// ReplayCommand is the command line that runs o's cell alone.
func ReplayCommand(o Outcome) string {
	cmd := "orderpaid-lab crashmatrix --only '" + o.Cell.String() + "'"
	if o.Cell.Then != "" {
		cmd += " --then '" + o.Cell.Then + "'"
	}
	if o.Without != "" {
		cmd += " --without " + o.Without
	}
	return cmd
}

// WriteJSON prints one JSON object per cell.
func WriteJSON(w io.Writer, outcomes []Outcome) error {
	enc := json.NewEncoder(w)
	for _, o := range outcomes {
		if err := enc.Encode(map[string]any{
			"flow": o.Cell.Flow(), "boundary": o.Cell.Boundary, "side": o.Cell.Side, "then": o.Cell.Then, "without": o.Without, "recovery": o.Recovery,
			"held": o.Held, "damage": o.Damage, "answers": o.Answers, "reconciled": o.Reconciled, "counts": o.Counts, "seconds": o.Elapsed.Seconds(),
		}); err != nil {
			return err
		}
	}
	return nil
}

// Summary is the line under the table: cells, held, and the rate; and the
// pairs whose second boundary was not met, if any.
func Summary(outcomes []Outcome, wall time.Duration) string {
	held, apart := 0, 0
	for _, o := range outcomes {
		switch {
		case o.Held:
			held++
		case o.SecondNotReached:
			apart++
		}
	}
	perMin := float64(len(outcomes)) / wall.Minutes()
	line := fmt.Sprintf("%d cells, %d held, %d not, in %s (%.1f cells a minute)", len(outcomes), held, len(outcomes)-held-apart, wall.Round(time.Second), perMin)
	if apart > 0 {
		line += fmt.Sprintf("; %d pairs whose second boundary the recovery did not meet this time", apart)
	}
	return line
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
