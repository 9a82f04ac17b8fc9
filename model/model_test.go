package model

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// requireSpin returns once spin and gcc are on the PATH. Where either is
// missing the test skips, saying how to install it; in CI (CI set), where it
// must run, it fails, as pgtest.RequireLogicalWAL does.
func requireSpin(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI (.ci/run installs it): %v", tool, err)
			}
			t.Skipf("%s is not installed: apt-get install spin gcc (docs/model.md)", tool)
		}
	}
}

// modelFiles are the model's sources: orderpaid.pml includes refund.pml in
// its -DREFUND build.
var modelFiles = []string{"orderpaid.pml", "refund.pml"}

// check builds the model with the flags and runs pan in a temporary
// directory: the safety build (assertions, end states) or, with liveness,
// the LTL property under weak fairness. It returns pan's output and the
// number of steps of the trail pan wrote, 0 when it wrote none.
func check(t *testing.T, liveness bool, flags ...string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range modelFiles {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var spinArgs []string
	for _, f := range flags {
		spinArgs = append(spinArgs, "-D"+f)
	}
	// Memory is bounded (MEMLIM, MB): a model grown by mistake stops, it
	// does not eat the machine.
	gccArgs := []string{"-O2", "-w", "-DMEMLIM=2048", "-o", "pan", "pan.c"}
	panArgs := []string{"-m100000"}
	if liveness {
		spinArgs = append(spinArgs, "-DLIVENESS")
		gccArgs = append(gccArgs, "-DNFAIR=3", "-DCOLLAPSE")
		panArgs = append(panArgs, "-a", "-f")
	} else {
		gccArgs = append(gccArgs, "-DSAFETY")
	}
	run(t, dir, "spin", append(append(spinArgs, "-a"), "orderpaid.pml")...)
	run(t, dir, "gcc", gccArgs...)
	out := run(t, dir, "./pan", panArgs...)
	steps := 0
	if trail, err := os.ReadFile(filepath.Join(dir, "orderpaid.pml.trail")); err == nil {
		steps = strings.Count(string(trail), "\n")
	}
	return out, steps
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

var statesRe = regexp.MustCompile(`(?m)^\s*(\S+) states, stored`)

// verified fails unless pan searched the whole state space and found no error.
func verified(t *testing.T, what, out string, took time.Duration) {
	t.Helper()
	if !strings.Contains(out, "errors: 0") || strings.Contains(out, "Search not completed") {
		t.Fatalf("%s: Spin did not verify the model:\n%s", what, out)
	}
	states := "?"
	if m := statesRe.FindStringSubmatch(out); m != nil {
		states = m[1]
	}
	t.Logf("%s: verified, 0 errors, full state space, %s states, %s", what, states, took.Round(100*time.Millisecond))
}

// TestModelWithEveryGuardVerifies: every assertion holds in every run of the
// model, and under weak fairness a paid order is eventually e-mailed.
func TestModelWithEveryGuardVerifies(t *testing.T) {
	requireSpin(t)
	t.Run("invariants", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		out, _ := check(t, false)
		verified(t, "assertions (safety build)", out, time.Since(start))
	})
	t.Run("refund", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		out, _ := check(t, false, "REFUND")
		verified(t, "the refund's assertions (safety build, -DREFUND)", out, time.Since(start))
	})
	t.Run("no_lost_email", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		out, _ := check(t, true)
		verified(t, "LTL emailed under weak fairness", out, time.Since(start))
	})
}

// guardOff is one guard switched off in the model and what Spin must find.
type guardOff struct {
	flag, guard, invariant string
	violated               string // in pan's output
	liveness               bool
	refund                 bool // in the refund's build (-DREFUND), where the payment's part keeps its guards
}

var guardsOff = []guardOff{
	{"NO_STATE_CHECK", "state-check", "the order moves to paid once", "assertion violated (transitions<=1)", false, false},
	{"NO_LEDGER_KEY", "ledger-key", "one commission", "assertion violated (commissions<=1)", false, false},
	{"NO_CHARGE_CLAIM", "charge-claim", "one charge", "assertion violated (charges<=1)", false, false},
	{"NO_ASK_FIRST", "ask-first", "one charge", "assertion violated (charges<=1)", false, false},
	{"NO_IDEMPOTENCY_KEY", "idempotency-key", "one charge", "assertion violated (charges<=1)", false, false},
	{"NO_WEBHOOK_INBOX", "webhook-inbox", "one acceptance per payment event", "assertion violated (accepted[ev]<=1)", false, false},
	{"NO_INBOX", "inbox", "once per message", "assertion violated  !(inbox)", false, false},
	{"NO_PROVIDER_KEY", "provider-key", "one e-mail", "assertion violated (emails<=1)", false, false},
	{"NO_NOTIFICATION_CLAIM", "notification-claim", "one e-mail", "assertion violated (emails<=1)", false, false},
	{"NO_OUTBOX", "outbox", "no lost e-mail (LTL emailed)", "acceptance cycle", true, false},
	{"NO_STATE_CHECK", "state-check", "the order moves to refunded once", "assertion violated (refundedT<=1)", false, true},
	{"NO_LEDGER_KEY", "ledger-key", "one commission reversal", "assertion violated (reversals<=1)", false, true},
	{"NO_NOTIFICATION_CLAIM", "notification-claim", "one refund notice", "assertion violated (notices<=1)", false, true},
}

// TestEachGuardOffBreaksItsInvariant: with each modelled guard off, Spin
// finds a run that breaks the invariant the guard protects, and says so.
func TestEachGuardOffBreaksItsInvariant(t *testing.T) {
	requireSpin(t)
	for _, g := range guardsOff {
		name, flags := g.guard, []string{g.flag}
		if g.refund {
			name, flags = g.guard+"/refund", append(flags, "REFUND")
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, steps := check(t, g.liveness, flags...)
			if !strings.Contains(out, g.violated) || steps == 0 {
				t.Fatalf("-D%s (--without %s): Spin found no violation of %q (want %q and a trail):\n%s",
					g.flag, g.guard, g.invariant, g.violated, out)
			}
			t.Logf("-D%s (--without %s): %s broken, %q, trail of %d steps", g.flag, g.guard, g.invariant, g.violated, steps)
		})
	}
}

// The model's comments name the crash matrix's boundaries (orderpaid.pml's
// header gives the syntax): "boundary: LIST", LIST names apart by ", ", each
// NAME a whole process/work/span#n or, after the first, a span#n of the
// process/work before it. A NAME ends at its ordinal; what follows the
// list's last NAME is prose.
var (
	nameRe = regexp.MustCompile(`^[^,#*]+#[0-9]+`)
	workRe = regexp.MustCompile(`^(api|worker)/[a-z_]+/`)
)

// boundaryNames reads the list that starts text (just past "boundary:").
func boundaryNames(text string) ([]string, error) {
	text = strings.TrimPrefix(text, " ")
	var names []string
	work := ""
	for {
		name := nameRe.FindString(text)
		if name == "" || strings.TrimSpace(name) != name {
			return names, fmt.Errorf("no NAME ending in #n at %q", text)
		}
		text = text[len(name):]
		if w := workRe.FindString(name); w != "" {
			work = w
		} else if work == "" {
			return names, fmt.Errorf("%s: a span#n with no process/work before it", name)
		} else {
			name = work + name
		}
		names = append(names, name)
		if !strings.HasPrefix(text, ",") {
			return names, nil
		}
		rest, ok := strings.CutPrefix(text, ", ")
		if !ok {
			return names, fmt.Errorf("%s: a comma and a space between two names, not %q", name, text)
		}
		text = rest
	}
}

// modelBoundaries returns each boundary the model's files name, with the
// place (file:line) that names it first. A "boundary:" right after a
// backquote is the header's explanation, not a list.
func modelBoundaries(t *testing.T) (names []string, place map[string]string) {
	t.Helper()
	place = map[string]string{}
	for _, file := range modelFiles {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for n, text := range strings.Split(string(src), "\n") {
			for at := 0; ; {
				i := strings.Index(text[at:], "boundary:")
				if i < 0 {
					break
				}
				i += at
				at = i + len("boundary:")
				if i > 0 && text[i-1] == '`' {
					continue
				}
				found, err := boundaryNames(text[at:])
				if err != nil {
					t.Errorf("%s:%d: %v", file, n+1, err)
				}
				for _, name := range found {
					if _, seen := place[name]; !seen {
						place[name] = fmt.Sprintf("%s:%d", file, n+1)
						names = append(names, name)
					}
				}
			}
		}
	}
	return names, place
}

// matrixRows reads the rows of the crash matrix page's table, "| flow |
// `BOUNDARY` | dies before | dies after | code |": each boundary's flow.
func matrixRows(page string) map[string]string {
	flowOf := map[string]string{}
	for _, text := range strings.Split(page, "\n") {
		if !strings.HasPrefix(text, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(text), "|"), "|")
		if len(cells) < 2 {
			continue
		}
		flow, b := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
		if flow == "" || len(b) < 2 || b[0] != '`' || b[len(b)-1] != '`' || !workRe.MatchString(b[1:len(b)-1]) {
			continue
		}
		flowOf[b[1:len(b)-1]] = flow
	}
	return flowOf
}

// TestModelBoundariesAreTheCrashMatrixs: every boundary a comment of the
// model names is a row of the published crash matrix (docs/crash-matrix.md,
// made from a clean run of the real code), and every flow of the matrix has
// a boundary in the model. A boundary renamed or gone from the code fails
// here once the page is made again; so does a flow the model leaves out.
func TestModelBoundariesAreTheCrashMatrixs(t *testing.T) {
	const pagePath = "../docs/crash-matrix.md"
	b, err := os.ReadFile(pagePath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	flowOf := matrixRows(page)
	flows := map[string]int{}
	for _, flow := range flowOf {
		flows[flow] = 0
	}
	if len(flows) == 0 {
		t.Fatalf("%s: no table row \"| flow | `BOUNDARY` | ...\"", pagePath)
	}
	names, line := modelBoundaries(t)
	if len(names) == 0 {
		t.Fatal("the model names no boundary")
	}
	for _, name := range names {
		if !strings.Contains(page, "| `"+name+"` |") {
			t.Errorf("%s: %s has no row in %s", line[name], name, pagePath)
			continue
		}
		if flow, ok := flowOf[name]; ok {
			flows[flow]++
		}
	}
	var sorted []string
	for flow := range flows {
		sorted = append(sorted, flow)
	}
	sort.Strings(sorted)
	for _, flow := range sorted {
		if flows[flow] == 0 {
			t.Errorf("the flow %s of %s has no boundary in the model", flow, pagePath)
		}
	}
	if !t.Failed() {
		t.Logf("%d boundaries of the model, each a row of %s; its flows %v, each with one at least", len(names), pagePath, sorted)
	}
}
