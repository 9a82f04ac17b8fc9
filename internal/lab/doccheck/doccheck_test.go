package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// skipDirs are never searched for Markdown files.
var skipDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true, "testdata": true}

// Every relative link in every Markdown file of the repository resolves to a
// file or directory that exists, and every #fragment pointing into a
// Markdown file names one of its headings.
func TestRelativeLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no Markdown files found: the walk is broken")
	}
	anchors := map[string]map[string]bool{} // cache per target file
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = Anchors(b)
		return anchors[path]
	}
	checked := 0
	for _, file := range files {
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for _, l := range Links(doc) {
			if !l.Relative() {
				continue
			}
			checked++
			path, fragment := l.Split()
			target := file
			switch {
			case path == "":
				// a heading of this file
			case strings.HasPrefix(path, "/"):
				target = filepath.Join(root, filepath.FromSlash(path))
			default:
				target = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
			}
			info, err := os.Stat(target)
			if err != nil {
				t.Errorf("%s:%d: link %q: %s does not exist", rel, l.Line, l.Target, path)
				continue
			}
			if fragment == "" || info.IsDir() || !strings.EqualFold(filepath.Ext(target), ".md") {
				continue // line anchors (#L10) of code files are not checked
			}
			if !anchorsOf(target)[fragment] {
				t.Errorf("%s:%d: link %q: no heading with anchor #%s in %s", rel, l.Line, l.Target, fragment, path)
			}
		}
	}
	t.Logf("checked %d relative links in %d Markdown files", checked, len(files))
}

// Every page under docs/ (docs/techniques/ too) has its translation at the
// same path under docs/pt-BR/, every page there has its English original, and
// the two link to each other. A page written in one language only fails here.
func TestEveryPageHasItsTwin(t *testing.T) {
	root := repoRoot(t)
	enDir, ptDir := filepath.Join(root, "docs"), filepath.Join(root, "docs", "pt-BR")
	en, pt := pagesIn(t, enDir, ptDir), pagesIn(t, ptDir, "")
	if len(en) == 0 || len(pt) == 0 {
		t.Fatalf("found %d English and %d pt-BR pages: the listing is broken", len(en), len(pt))
	}
	onlyEN, onlyPT := Unpaired(en, pt)
	for _, p := range onlyEN {
		t.Errorf("docs/%s has no translation: write docs/pt-BR/%s (and link the two)", p, p)
	}
	for _, p := range onlyPT {
		t.Errorf("docs/pt-BR/%s has no English page docs/%s", p, p)
	}
	for _, p := range en {
		if slices.Contains(onlyEN, p) {
			continue
		}
		enPage, ptPage := filepath.Join(enDir, filepath.FromSlash(p)), filepath.Join(ptDir, filepath.FromSlash(p))
		if !linksTo(t, enPage, ptPage) {
			t.Errorf("docs/%s does not link to its translation docs/pt-BR/%s", p, p)
		}
		if !linksTo(t, ptPage, enPage) {
			t.Errorf("docs/pt-BR/%s does not link back to docs/%s", p, p)
		}
	}
}

// The Markdown pages at the repository's root have their twins beside them:
// README.md and README.pt-BR.md, linked both ways. A README.md without
// README.pt-BR.md fails here, as a docs page without its pt-BR twin fails
// above.
func TestEveryRootPageHasItsTwin(t *testing.T) {
	root := repoRoot(t)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	en, pt := RootPages(names)
	if !slices.Contains(en, "README.md") {
		t.Fatalf("no README.md among the root's Markdown pages %q: the listing is broken", en)
	}
	onlyEN, onlyPT := Unpaired(en, pt)
	for _, p := range onlyEN {
		t.Errorf("%s has no translation: write %s (and link the two)", p, PTRootName(p))
	}
	for _, p := range onlyPT {
		t.Errorf("%s has no English page %s", PTRootName(p), p)
	}
	for _, p := range en {
		if slices.Contains(onlyEN, p) {
			continue
		}
		enPage, ptPage := filepath.Join(root, p), filepath.Join(root, PTRootName(p))
		if !linksTo(t, enPage, ptPage) {
			t.Errorf("%s does not link to its translation %s", p, PTRootName(p))
		}
		if !linksTo(t, ptPage, enPage) {
			t.Errorf("%s does not link back to %s", PTRootName(p), p)
		}
	}
}

func TestRootPages(t *testing.T) {
	en, pt := RootPages([]string{"README.md", "README.pt-BR.md", "go.mod", "CHANGES.md", "NOTES.pt-BR.md"})
	if want := []string{"README.md", "CHANGES.md"}; !reflect.DeepEqual(en, want) {
		t.Errorf("en = %q, want %q", en, want)
	}
	if want := []string{"README.md", "NOTES.md"}; !reflect.DeepEqual(pt, want) {
		t.Errorf("pt = %q, want %q", pt, want)
	}
	onlyEN, onlyPT := Unpaired(en, pt)
	if want := []string{"CHANGES.md"}; !reflect.DeepEqual(onlyEN, want) {
		t.Errorf("onlyEN = %q, want %q", onlyEN, want)
	}
	if want := []string{"NOTES.md"}; !reflect.DeepEqual(onlyPT, want) {
		t.Errorf("onlyPT = %q, want %q", onlyPT, want)
	}
	// A README.md alone is unpaired: the root's README needs its twin.
	if onlyEN, _ := Unpaired(RootPages([]string{"README.md", "Makefile"})); !reflect.DeepEqual(onlyEN, []string{"README.md"}) {
		t.Errorf("a README.md without README.pt-BR.md: onlyEN = %q, want [README.md]", onlyEN)
	}
	if got := PTRootName("README.md"); got != "README.pt-BR.md" {
		t.Errorf("PTRootName(README.md) = %q, want README.pt-BR.md", got)
	}
}

// pagesIn lists the Markdown pages under dir, folders included, as
// slash-separated paths relative to dir, leaving out the folder skip.
func pagesIn(t *testing.T, dir, skip string) []string {
	t.Helper()
	var pages []string
	for _, f := range markdownFiles(t, dir) {
		if skip != "" && strings.HasPrefix(f, skip+string(filepath.Separator)) {
			continue
		}
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages
}

func TestUnpaired(t *testing.T) {
	en := []string{"README.md", "workshop.md", "decision-guide.md", "techniques/outbox.md"}
	pt := []string{"techniques/outbox.md", "README.md", "workshop.md", "techniques/inbox.md"}
	onlyEN, onlyPT := Unpaired(en, pt)
	if want := []string{"decision-guide.md"}; !reflect.DeepEqual(onlyEN, want) {
		t.Errorf("onlyEN = %q, want %q", onlyEN, want)
	}
	if want := []string{"techniques/inbox.md"}; !reflect.DeepEqual(onlyPT, want) {
		t.Errorf("onlyPT = %q, want %q", onlyPT, want)
	}
	if a, b := Unpaired(en, en); a != nil || b != nil {
		t.Errorf("a language paired with itself: %q, %q", a, b)
	}
}

// linksTo reports whether the Markdown file from has a relative link to the
// file to.
func linksTo(t *testing.T, from, to string) bool {
	t.Helper()
	doc, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range Links(doc) {
		if !l.Relative() {
			continue
		}
		path, _ := l.Split()
		if path != "" && filepath.Join(filepath.Dir(from), filepath.FromSlash(path)) == to {
			return true
		}
	}
	return false
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// eachMarkdown calls fn with every Markdown file of the repository: its path
// from root, its path and its text.
func eachMarkdown(t *testing.T, root string, fn func(rel, file string, doc []byte)) {
	t.Helper()
	for _, file := range markdownFiles(t, root) {
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		fn(rel, file, doc)
	}
}

func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.EqualFold(filepath.Ext(path), ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestLinks(t *testing.T) {
	doc := "# Title\n" +
		"See [the code](../internal/order/markpaid.go) and ![diagram](img/flow.png \"Flow\").\n" +
		"Two on a line: [a](a.md#x) [b](<b c.md>), a URL [w](https://example.com) and a [same-file](#title).\n" +
		"Not links: `[x](in-code.md)` and [brackets] alone.\n" +
		"```go\n" +
		"// [y](in-fence.md)\n" +
		"```\n" +
		"[ref]: ../README.md\n"
	var got []string
	for _, l := range Links([]byte(doc)) {
		got = append(got, l.Target)
	}
	want := []string{"../internal/order/markpaid.go", "img/flow.png", "a.md#x", "b c.md", "https://example.com", "#title", "../README.md"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Links:\n got %q\nwant %q", got, want)
	}
}

func TestRelativeAndSplit(t *testing.T) {
	for _, tc := range []struct {
		target         string
		relative       bool
		path, fragment string
	}{
		{"../a.md#x-y", true, "../a.md", "x-y"},
		{"#only", true, "", "only"},
		{"b%20c.md?plain=1#L3", true, "b c.md", "L3"},
		{"https://x.org/a.md", false, "", ""},
		{"mailto:a@b.c", false, "", ""},
		{"//cdn.example.com/x.js", false, "", ""},
	} {
		l := Link{Target: tc.target}
		if l.Relative() != tc.relative {
			t.Errorf("%q: Relative() = %v, want %v", tc.target, l.Relative(), tc.relative)
		}
		if !tc.relative {
			continue
		}
		if p, f := l.Split(); p != tc.path || f != tc.fragment {
			t.Errorf("%q: Split() = %q, %q; want %q, %q", tc.target, p, f, tc.path, tc.fragment)
		}
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The flow":                               "the-flow",
		"1. State check: `UPDATE ... WHERE`":     "1-state-check-update--where",
		"Webhooks / queues":                      "webhooks--queues",
		"Execution versus effect (the audit)":    "execution-versus-effect-the-audit",
		"Exercício 1: o estado":                  "exercício-1-o-estado",
		"[Link](x.md) in a heading":              "link-in-a-heading",
		"What it costs, and when it's the wrong": "what-it-costs-and-when-its-the-wrong",
		"snake_case_name":                        "snake_case_name",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestAnchors(t *testing.T) {
	doc := "# Guide\n## Setup\n```\n# not a heading\n```\n## Setup\n## Setup ##\n<a id=\"custom\"></a>\n"
	got := Anchors([]byte(doc))
	for _, want := range []string{"guide", "setup", "setup-1", "setup-2", "custom"} {
		if !got[want] {
			t.Errorf("anchor %q missing from %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line inside a code fence was taken for a heading")
	}
}
