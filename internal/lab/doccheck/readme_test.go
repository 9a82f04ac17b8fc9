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
