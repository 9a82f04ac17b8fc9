package model

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// check builds the model with the flags and runs pan in a temporary
// directory: the safety build (assertions, end states) or, with liveness,
// the LTL property under weak fairness. It returns pan's output and the
// number of steps of the trail pan wrote, 0 when it wrote none.
func check(t *testing.T, liveness bool, flags ...string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile("orderpaid.pml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "orderpaid.pml"), src, 0o644); err != nil {
		t.Fatal(err)
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
}

var guardsOff = []guardOff{
	{"NO_STATE_CHECK", "state-check", "the order moves to paid once", "assertion violated (transitions<=1)", false},
	{"NO_LEDGER_KEY", "ledger-key", "one commission", "assertion violated (commissions<=1)", false},
	{"NO_CHARGE_CLAIM", "charge-claim", "one charge", "assertion violated (charges<=1)", false},
	{"NO_ASK_FIRST", "ask-first", "one charge", "assertion violated (charges<=1)", false},
	{"NO_IDEMPOTENCY_KEY", "idempotency-key", "one charge", "assertion violated (charges<=1)", false},
	{"NO_WEBHOOK_INBOX", "webhook-inbox", "one acceptance per payment event", "assertion violated (accepted[ev]<=1)", false},
	{"NO_INBOX", "inbox", "once per message", "assertion violated  !(inbox)", false},
	{"NO_PROVIDER_KEY", "provider-key", "one e-mail", "assertion violated (emails<=1)", false},
	{"NO_NOTIFICATION_CLAIM", "notification-claim", "one e-mail", "assertion violated (emails<=1)", false},
	{"NO_OUTBOX", "outbox", "no lost e-mail (LTL emailed)", "acceptance cycle", true},
}

// TestEachGuardOffBreaksItsInvariant: with each modelled guard off, Spin
// finds a run that breaks the invariant the guard protects, and says so.
func TestEachGuardOffBreaksItsInvariant(t *testing.T) {
	requireSpin(t)
	for _, g := range guardsOff {
		t.Run(g.guard, func(t *testing.T) {
			t.Parallel()
			out, steps := check(t, g.liveness, g.flag)
			if !strings.Contains(out, g.violated) || steps == 0 {
				t.Fatalf("-D%s (--without %s): Spin found no violation of %q (want %q and a trail):\n%s",
					g.flag, g.guard, g.invariant, g.violated, out)
			}
			t.Logf("-D%s (--without %s): %s broken, %q, trail of %d steps", g.flag, g.guard, g.invariant, g.violated, steps)
		})
	}
}
