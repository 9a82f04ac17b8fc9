package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
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

// Every page of docs/pt-BR translates the English page at the same path
// under docs/, and the two link to each other.
func TestTranslationsLinkBothWays(t *testing.T) {
	root := repoRoot(t)
	ptDir := filepath.Join(root, "docs", "pt-BR")
	if _, err := os.Stat(ptDir); err != nil {
		t.Skip("no docs/pt-BR")
	}
	for _, pt := range markdownFiles(t, ptDir) {
		rel, _ := filepath.Rel(ptDir, pt)
		en := filepath.Join(root, "docs", rel)
		if _, err := os.Stat(en); err != nil {
			t.Errorf("docs/pt-BR/%s has no English page docs/%s", rel, rel)
			continue
		}
		if !linksTo(t, en, pt) {
			t.Errorf("docs/%s does not link to its translation docs/pt-BR/%s", rel, rel)
		}
		if !linksTo(t, pt, en) {
			t.Errorf("docs/pt-BR/%s does not link back to docs/%s", rel, rel)
		}
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
