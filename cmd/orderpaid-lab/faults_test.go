package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/app"
)

// module is this repository's module path, for resolving imports to folders.
const module = "github.com/orderpaid/orderpaid"

// faultPoints must name every point the code hits, or --faults refuses a
// real point. This test reads the service's source: every call
// <set>.Hit(<constant>) outside tests, the constant resolved to its string
// in the package that declares it, must be in app.FaultPoints().
func TestFaultPointsListEveryHit(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	consts := map[string]map[string]string{} // folder -> constant -> value
	type hit struct{ pos, dir, pkg, name string }
	var hits []hit
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		dir = filepath.ToSlash(dir)
		imports := map[string]string{} // name in this file -> folder
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(ip, module+"/") {
				continue
			}
			name := path.Base(ip)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = strings.TrimPrefix(ip, module+"/")
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if i < len(n.Values) {
						if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if consts[dir] == nil {
								consts[dir] = map[string]string{}
							}
							consts[dir][id.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Hit" || len(n.Args) != 1 {
					return true
				}
				h := hit{pos: fset.Position(n.Pos()).String(), dir: dir}
				switch arg := n.Args[0].(type) {
				case *ast.Ident:
					h.name = arg.Name
				case *ast.SelectorExpr:
					if x, ok := arg.X.(*ast.Ident); ok {
						h.dir, h.pkg, h.name = imports[x.Name], x.Name, arg.Sel.Name
					}
				}
				hits = append(hits, h)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) < len(app.FaultPoints()) {
		t.Fatalf("found %d Hit calls in the source, fewer than the %d fault points listed: is the walk broken?", len(hits), len(app.FaultPoints()))
	}
	for _, h := range hits {
		value, ok := consts[h.dir][h.name]
		if h.name == "" || !ok {
			t.Errorf("%s: Hit with an argument this test cannot resolve to a string constant (%s.%s): name the point with a constant", h.pos, h.pkg, h.name)
			continue
		}
		if !slices.Contains(app.FaultPoints(), value) {
			t.Errorf("%s: fault point %q (%s) is hit but missing from app.FaultPoints(), so --faults refuses it: add it there", h.pos, value, h.name)
		}
	}
}
