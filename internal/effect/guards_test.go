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

var update = flag.Bool("update", false, "rewrite the table of effects of README.md and README.pt-BR.md from effect.Protections")

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
		effect.GuardAskFirst, effect.GuardChargeClaim, effect.GuardChargeRecord, effect.GuardIdempotencyKey, effect.GuardInbox, effect.GuardLedgerKey,
		effect.GuardNotificationClaim, effect.GuardOutbox, effect.GuardProviderKey, effect.GuardStateCheck, effect.GuardStockReservation, effect.GuardWebhookInbox,
	}
	if got := effect.GuardNames(); !slices.Equal(got, want) {
		t.Errorf("GuardNames() = %v, want every Guard constant once, sorted: %v", got, want)
	}
}

// readme is one README with a table of effects: the file, the markers its
// table sits between, and its language's words for the table.
type readme struct {
	path, start, end string
	header           string // the table's header and delimiter rows
	none             string // the guard column of a row the lab cannot switch off
	says, how        func(effect.Protection) string
	page             func(string) string // the row's page, as this README links it
}

// readmes are the README and its pt-BR twin. Their tables are made from the
// same rows of effect.Protections, in the same order, with the same
// --without names and the same code links; only the words are translated,
// and each row's page is the page in the README's language.
var readmes = []readme{
	{
		path:   "README.md",
		start:  "<!-- the table of effects: made from internal/effect/guards.go (go test ./internal/effect -update) -->",
		end:    "<!-- end of the table of effects -->",
		header: "| effect (must not happen twice) | technique | guard (`--without`) | code |\n|---|---|---|---|\n",
		none:   "none: nothing to switch off",
		says:   func(p effect.Protection) string { return p.Says },
		how:    func(p effect.Protection) string { return p.How },
		page:   func(page string) string { return page },
	},
	{
		path:   "README.pt-BR.md",
		start:  "<!-- a tabela de efeitos: gerada de internal/effect/guards.go (go test ./internal/effect -update) -->",
		end:    "<!-- fim da tabela de efeitos -->",
		header: "| efeito (não pode acontecer duas vezes) | técnica | proteção (`--without`) | código |\n|---|---|---|---|\n",
		none:   "nenhuma: nada a desligar",
		says:   func(p effect.Protection) string { return p.SaysPT },
		how:    func(p effect.Protection) string { return p.HowPT },
		page:   func(page string) string { return "docs/pt-BR/" + strings.TrimPrefix(page, "docs/") },
	},
}

// table renders a README's table of effects from the table.
func (r readme) table(t *testing.T) string {
	var b strings.Builder
	b.WriteString(r.header)
	for _, p := range effect.Protections {
		if r.says(p) == "" || r.how(p) == "" {
			t.Errorf("%s: %s: the row has no words for this README's table (Says/How, SaysPT/HowPT)", r.path, p.Effect)
		}
		without := r.none
		if p.Without != "" {
			without = "`" + p.Without + "`"
		}
		file := declared(t, p.Guard)
		fmt.Fprintf(&b, "| %s | %s ([%s](%s)) | %s | [%s](%s) |\n", r.says(p), r.how(p), p.Technique, r.page(p.Page), without, file, file)
	}
	return b.String()
}

// The README's table of effects, and its twin's in README.pt-BR.md, are the
// table's: a row added, renamed or moved here and not there fails, naming
// the README. Rewrite both with go test ./internal/effect -update.
func TestREADMETableIsTheTable(t *testing.T) {
	for _, r := range readmes {
		path := filepath.Join(root, r.path)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		before, rest, ok1 := strings.Cut(text, r.start+"\n")
		table, after, ok2 := strings.Cut(rest, r.end)
		if !ok1 || !ok2 {
			t.Errorf("%s: the table of effects is not between %q and %q", r.path, r.start, r.end)
			continue
		}
		want := r.table(t)
		if table == want {
			continue
		}
		if *update {
			if err := os.WriteFile(path, []byte(before+r.start+"\n"+want+r.end+after), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: the table of effects differs from internal/effect/guards.go; run go test ./internal/effect -update\n got:\n%s\nwant:\n%s", r.path, table, want)
	}
}
