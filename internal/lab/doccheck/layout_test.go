package doccheck_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The folders under internal/ show a learner what is what:
//
//   - the story, at the top: the packages one order goes through
//     (httpapi, webhook, outbox, consumer, payment, order, ledger, notify, ...);
//   - internal/platform: what holds the story up (broker, postgres, queries,
//     config, ...);
//   - internal/ops: the operator's tools (backfill, reprocess, retention, reconcile);
//   - internal/lab: the harness (fakes, scenarios, bench, soak, test helpers,
//     these checks);
//   - internal/app: the wiring both binaries run (cmd/orderpaid,
//     cmd/orderpaid-lab), over the story, the platform and the operator's
//     tools.
//
// Arrows run one way: the story and the platform never import the operator's
// tools, the wiring or the lab, the platform never imports the story, only
// cmd/ imports the wiring, and nothing but the lab and cmd/ imports the lab:
// not the wiring either, which production's binary links. This test reads
// every non-test Go file's imports and fails on an arrow that runs back.

const module = "github.com/orderpaid/orderpaid/"

// zone names the zone of a package directory relative to the repository
// root ("internal/payment", "cmd/orderpaid").
func zone(dir string) string {
	switch {
	case strings.HasPrefix(dir, "cmd/"):
		return "cmd"
	case dir == "sql/migrations":
		return "platform" // the embedded schema
	case strings.HasPrefix(dir, "internal/platform/"):
		return "platform"
	case strings.HasPrefix(dir, "internal/ops/"):
		return "ops"
	case strings.HasPrefix(dir, "internal/lab/"):
		return "lab"
	case dir == "internal/app" || strings.HasPrefix(dir, "internal/app/"):
		return "app"
	case strings.HasPrefix(dir, "internal/"):
		return "story"
	}
	return "other"
}

// allowed lists, per zone, the zones it may import.
var allowed = map[string][]string{
	"platform": {"platform"},
	"story":    {"story", "platform"},
	"ops":      {"ops", "story", "platform"},
	"lab":      {"lab", "ops", "story", "platform"},
	"app":      {"app", "ops", "story", "platform"},
	"cmd":      {"cmd", "app", "lab", "ops", "story", "platform"},
}

func TestImportsRunOneWay(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	var checked int
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name != "." && name != ".." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		from := zone(filepath.ToSlash(filepath.Dir(rel)))
		if from == "other" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			target, ok := strings.CutPrefix(path, module)
			if !ok {
				continue
			}
			to := zone(target)
			if !contains(allowed[from], to) {
				t.Errorf("%s (%s) imports %s (%s): a %s package may import only %v", filepath.ToSlash(rel), from, target, to, from, allowed[from])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the walk did not find the repository", checked)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
