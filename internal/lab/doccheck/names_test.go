package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codeNameLink is a link whose text is one Go name in a code span and whose
// target is a Go file: [`InTx`](../internal/platform/postgres/tx.go),
// [`postgres.Routed`](...), [`Run.Step`](...).
var codeNameLink = regexp.MustCompile("\\[`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)*)`\\]\\(([^)\\s#]+\\.go)(?:#[^)]*)?\\)")

// nameThenFileLink is a Go name in a code span followed by a link to the
// file, in parentheses: `Service.claimCharge` ([charge.go](../internal/payment/charge.go)).
var nameThenFileLink = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)*)` \\(\\[`?[^\\]`]+\\.go`?\\]\\(([^)\\s#]+\\.go)(?:#[^)]*)?\\)")

// fileLinkThenName is a link to a Go file followed by a name in parentheses:
// [`pay.go`](../internal/payment/pay.go) (`Service.Pay`, ...).
var fileLinkThenName = regexp.MustCompile("\\]\\(([^)\\s#]+\\.go)(?:#[^)]*)?\\) \\(`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)*)`")

// A link that names a function, type, method, field, constant or variable
// points at the file that declares it, and a name beside a link to a file,
// `Service.claimCharge` ([charge.go](...)) or [pay.go](...) (`Service.Pay`),
// names something that file declares or uses: when code moves to another file, the docs that named it
// there fail here until they follow (that the targets exist is
// TestRelativeLinksResolve's check; this one checks the name). Names with an
// underscore are SQL names, values and metric labels, not Go's, and are left
// alone.
func TestCodeLinksNameWhatTheFileDeclares(t *testing.T) {
	root := repoRoot(t)
	type names struct{ declared, used map[string]bool }
	parsed := map[string]names{}
	namesIn := func(path string) names {
		if n, ok := parsed[path]; ok {
			return n
		}
		n := names{declared: map[string]bool{}, used: map[string]bool{}}
		if f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution); err == nil {
			ast.Inspect(f, func(node ast.Node) bool {
				var ids []*ast.Ident
				switch node := node.(type) {
				case *ast.FuncDecl:
					ids = []*ast.Ident{node.Name}
				case *ast.TypeSpec:
					ids = []*ast.Ident{node.Name}
				case *ast.ValueSpec:
					ids = node.Names
				case *ast.Field:
					ids = node.Names
				case *ast.Ident:
					n.used[node.Name] = true
				}
				for _, id := range ids {
					n.declared[id.Name] = true
				}
				return true
			})
		}
		parsed[path] = n
		return n
	}
	checked := 0
	eachMarkdown(t, root, func(rel, file string, doc []byte) {
		forEachProseLine(doc, func(line int, text string) {
			check := func(name, target string, declaredOnly bool) {
				if strings.Contains(name, "_") || strings.HasSuffix(name, ".go") {
					return // not a Go name, or a file's
				}
				path := filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
				if _, err := os.Stat(path); err != nil {
					return // TestRelativeLinksResolve reports it
				}
				checked++
				last := name[strings.LastIndex(name, ".")+1:]
				n := namesIn(path)
				switch {
				case declaredOnly && !n.declared[last]:
					t.Errorf("%s:%d: [`%s`](%s): %s declares no %s", rel, line, name, target, target, last)
				case !declaredOnly && !n.declared[last] && !n.used[last]:
					t.Errorf("%s:%d: `%s` ([...](%s)): %s neither declares nor uses %s", rel, line, name, target, target, last)
				}
			}
			for _, m := range codeNameLink.FindAllStringSubmatch(text, -1) {
				check(m[1], m[2], true)
			}
			for _, m := range nameThenFileLink.FindAllStringSubmatch(text, -1) {
				check(m[1], m[2], false)
			}
			for _, m := range fileLinkThenName.FindAllStringSubmatch(text, -1) {
				check(m[2], m[1], false)
			}
		})
	})
	if checked < 200 {
		t.Fatalf("checked %d links naming Go declarations, want the docs' hundreds: the patterns are broken", checked)
	}
	t.Logf("checked %d links naming Go declarations", checked)
}
