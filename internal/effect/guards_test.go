package effect_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
)

var update = flag.Bool("update", false, "rewrite the README's table of effects from effect.Protections")

const root = "../.."

// declared finds where name (package.Func, or package.Type.Method) is
// declared in internal/<package>, and returns the file, relative to the
// repository's root; "" when it is declared nowhere.
func declared(t *testing.T, name string) string {
	t.Helper()
	pkg, rest, ok := strings.Cut(name, ".")
	if !ok {
		return ""
	}
	recv, fn, isMethod := strings.Cut(rest, ".")
	if !isMethod {
		recv, fn = "", rest
	}
	dir := filepath.Join(root, "internal", pkg)
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != fn || (fd.Recv == nil) != (recv == "") {
				continue
			}
			if recv != "" && !strings.Contains(types(fd.Recv.List[0].Type), recv) {
				continue
			}
			rel, _ := filepath.Rel(root, f)
			return filepath.ToSlash(rel)
		}
	}
	return ""
}

func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return types(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// Every row of the table names a guard and a mistake that exist, declared
// where the row says, and a doc page that exists: the table cannot name
// what the code does not have.
func TestProtectionsNameWhatExists(t *testing.T) {
	for _, p := range effect.Protections {
		if declared(t, p.Guard) == "" {
			t.Errorf("%s: guard %s is declared nowhere under internal/", p.Effect, p.Guard)
		}
		if (p.Mistake == "") != (p.Without == "") {
			t.Errorf("%s: a row has a mistake exactly when the lab can switch it off (mistake %q, without %q)", p.Effect, p.Mistake, p.Without)
		}
		if p.Mistake != "" && declared(t, p.Mistake) == "" {
			t.Errorf("%s: mistake %s is declared nowhere under internal/", p.Effect, p.Mistake)
		}
		if _, err := os.Stat(filepath.Join(root, p.Page)); err != nil {
			t.Errorf("%s: page %s: %v", p.Effect, p.Page, err)
		}
		if _, err := os.Stat(filepath.Join(root, "docs", "pt-BR", strings.TrimPrefix(p.Page, "docs/"))); err != nil {
			t.Errorf("%s: the page's pt-BR twin: %v", p.Effect, err)
		}
	}
}

// One guard, one mistake: every row of a guard names the same technique,
// and the names the lab accepts are the guards of the table.
func TestProtectionsAgree(t *testing.T) {
	technique := map[string]effect.Technique{}
	for _, p := range effect.Protections {
		if p.Without == "" {
			continue
		}
		if t0, ok := technique[p.Without]; ok && t0 != p.Technique {
			t.Errorf("guard %s: technique %s in one row, %s in another", p.Without, t0, p.Technique)
		}
		technique[p.Without] = p.Technique
	}
	want := []string{
		effect.GuardChargeClaim, effect.GuardChargeRecord, effect.GuardIdempotencyKey, effect.GuardInbox, effect.GuardLedgerKey,
		effect.GuardOutbox, effect.GuardProviderKey, effect.GuardStateCheck, effect.GuardStockReservation, effect.GuardWebhookInbox,
	}
	if got := effect.GuardNames(); !slices.Equal(got, want) {
		t.Errorf("GuardNames() = %v, want every Guard constant once, sorted: %v", got, want)
	}
}

const (
	tableStart = "<!-- the table of effects: made from internal/effect/guards.go (go test ./internal/effect -update) -->"
	tableEnd   = "<!-- end of the table of effects -->"
)

// readmeTable renders the README's table of effects from the table.
func readmeTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| effect (must not happen twice) | technique | guard (`--without`) | code |\n|---|---|---|---|\n")
	for _, p := range effect.Protections {
		without := "none: nothing to switch off"
		if p.Without != "" {
			without = "`" + p.Without + "`"
		}
		file := declared(t, p.Guard)
		fmt.Fprintf(&b, "| %s | %s ([%s](%s)) | %s | [%s](%s) |\n", p.Says, p.How, p.Technique, p.Page, without, file, file)
	}
	return b.String()
}

// The README's table of effects is the table's: a row added, renamed or
// moved here and not there fails, naming the README. Rewrite it with
// go test ./internal/effect -update.
func TestREADMETableIsTheTable(t *testing.T) {
	path := filepath.Join(root, "README.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	before, rest, ok1 := strings.Cut(text, tableStart+"\n")
	table, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("README.md: the table of effects is not between %q and %q", tableStart, tableEnd)
	}
	want := readmeTable(t)
	if table == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+tableStart+"\n"+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md: the table of effects differs from internal/effect/guards.go; run go test ./internal/effect -update\n got:\n%s\nwant:\n%s", table, want)
}
