package doccheck_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/doccheck"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The README's table of environment variables, and its twin's in
// README.pt-BR.md, names every variable the code reads, so a new one cannot
// go undocumented in either language.
func TestREADMEListsEveryVariable(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"README.md", "README.pt-BR.md"} {
		readme, err := os.ReadFile("../../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range config.Variables {
			if !strings.Contains(string(readme), "| `"+v+"` |") {
				t.Errorf("%s has no row for %s in its table of environment variables", name, v)
			}
		}
	}
}

// The README's reading order follows one order through the files that tell
// it, each about one screen: every Go file it links is at most 150 lines,
// and README.pt-BR.md's names the same files. A file that grows past it is
// split where its story splits, or leaves the reading order.
func TestReadingOrderFilesFitOneScreen(t *testing.T) {
	t.Parallel()
	const maxLines = 150
	files := map[string][]string{}
	for name, heading := range map[string]string{"README.md": "## Reading order", "README.pt-BR.md": "## Ordem de leitura"} {
		readme, err := os.ReadFile("../../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		_, section, ok := strings.Cut(string(readme), "\n"+heading+"\n")
		if !ok {
			t.Fatalf("%s has no %q section", name, heading)
		}
		section, _, _ = strings.Cut(section, "\n## ")
		for _, l := range doccheck.Links([]byte(section)) {
			if path, _ := l.Split(); l.Relative() && strings.HasSuffix(path, ".go") && !slices.Contains(files[name], path) {
				files[name] = append(files[name], path)
			}
		}
		if len(files[name]) < 10 {
			t.Fatalf("%s's %q links %d Go files, want the whole flow's (10 or more)", name, heading, len(files[name]))
		}
	}
	readingOrderFigures(t, files["README.md"])
	slices.Sort(files["README.md"])
	slices.Sort(files["README.pt-BR.md"])
	if !slices.Equal(files["README.md"], files["README.pt-BR.md"]) {
		t.Errorf("the reading orders name different files:\n README.md       %v\n README.pt-BR.md %v", files["README.md"], files["README.pt-BR.md"])
	}
	for _, path := range files["README.md"] {
		b, err := os.ReadFile("../../../" + path)
		if err != nil {
			t.Errorf("the reading order links %s: %v", path, err)
			continue
		}
		if n := strings.Count(string(b), "\n"); n > maxLines {
			t.Errorf("%s is %d lines, over the reading order's %d: split it where its story splits", path, n, maxLines)
		}
	}
}

// readingOrderFigures holds the reading order, files in the order the
// README links them, to its budget: inside out, the state check (order's
// MarkPaid) within the first 300 lines read, the whole at most 1,600.
func readingOrderFigures(t *testing.T, files []string) {
	t.Helper()
	const stateCheckBy, maxTotal = 300, 1600
	total, stateCheck := 0, 0
	for _, path := range files {
		b, err := os.ReadFile("../../../" + path)
		if err != nil {
			continue // reported by the caller
		}
		if path == "internal/order/markpaid.go" {
			before, _, ok := strings.Cut(string(b), "\nfunc MarkPaid(")
			if !ok {
				t.Fatalf("%s declares no MarkPaid: where is the state check?", path)
			}
			stateCheck = total + strings.Count(before, "\n") + 2
		}
		total += strings.Count(string(b), "\n")
	}
	t.Logf("reading order: %d files, %d lines, the state check at line %d", len(files), total, stateCheck)
	if stateCheck == 0 || stateCheck > stateCheckBy {
		t.Errorf("the state check (internal/order/markpaid.go's MarkPaid) is read at line %d, want it within the first %d: the reading goes inside out", stateCheck, stateCheckBy)
	}
	if total > maxTotal {
		t.Errorf("the reading order is %d lines, over its %d", total, maxTotal)
	}
}
