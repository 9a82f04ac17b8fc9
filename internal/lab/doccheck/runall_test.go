package doccheck_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// isRunAll: b is `scenario run all`, the catalogue's whole run.
func isRunAll(b block) bool {
	return len(b.cmds) == 1 && strings.HasSuffix(b.cmds[0].line, "orderpaid-lab scenario run all")
}

var (
	progressLine = regexp.MustCompile(`^\[(\d+)/(\d+)\] ([a-z0-9-]+): running$`)
	summaryLine  = regexp.MustCompile(`^(\d+) of (\d+) scenario runs showed what they expected$`)
)

// TestRunAllBlock checks a `scenario run all` block without running it (it
// takes the longest, and its kill scenarios' counts vary from run to run;
// each scenario's own block is re-run by TestTranscripts): the block runs
// every scenario of `scenario list`, in its order, [i/N] counting them,
// the table has a row for each, and the summary counts them all.
func TestRunAllBlock(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	list := exec.Command("go", "run", "./cmd/orderpaid-lab", "scenario", "list")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("scenario list: %v", err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
		names = append(names, strings.Fields(l)[0])
	}
	checked := 0
	for _, b := range consoleBlocks(t, root) {
		if !isRunAll(b) {
			continue
		}
		checked++
		for _, d := range runAllDifferences(b.cmds[0].output, names) {
			t.Errorf("%s:%d: `scenario run all`: %s", b.page, b.line, d)
		}
	}
	if checked == 0 {
		t.Fatal("no `scenario run all` block: the test checks nothing (take it away with the blocks)")
	}
}

// runAllDifferences says where the output of `scenario run all` a page shows
// is not a run of names, the scenarios of `scenario list`.
func runAllDifferences(output, names []string) []string {
	var diffs, running, rows []string
	summary, inTable := "", false
	for _, l := range output {
		switch m := progressLine.FindStringSubmatch(l); {
		case m != nil:
			want := fmt.Sprintf("[%d/%d] ", len(running)+1, len(names))
			if !strings.HasPrefix(l, want) {
				diffs = append(diffs, fmt.Sprintf("%q: want %s, there are %d scenarios", l, want, len(names)))
			}
			running = append(running, m[3])
		case strings.HasPrefix(l, "SCENARIO "):
			inTable = true
		case summaryLine.MatchString(l):
			summary, inTable = l, false
		case inTable && strings.TrimSpace(l) != "":
			rows = append(rows, strings.Fields(l)[0])
		}
	}
	if got, want := strings.Join(running, " "), strings.Join(names, " "); got != want {
		diffs = append(diffs, fmt.Sprintf("runs the scenarios\n  %s\nwhere scenario list has\n  %s", got, want))
	}
	if got, want := strings.Join(rows, " "), strings.Join(names, " "); got != want {
		diffs = append(diffs, fmt.Sprintf("its table has the rows\n  %s\nwhere scenario list has\n  %s", got, want))
	}
	if m := summaryLine.FindStringSubmatch(summary); m == nil || m[2] != strconv.Itoa(len(names)) {
		diffs = append(diffs, fmt.Sprintf("the summary %q does not count the %d scenarios", summary, len(names)))
	}
	return diffs
}
