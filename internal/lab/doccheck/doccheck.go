// Package doccheck keeps the documentation honest: its test walks every
// Markdown file of the repository and fails when a relative link points at a
// file that does not exist, or when a #fragment names a heading that the
// target Markdown file does not have. A second test checks that every page
// under docs/ (docs/techniques/ included) has its Brazilian Portuguese twin at the same
// path under docs/pt-BR/ (and every pt-BR page its English original), and
// that the two link to each other; at the repository's root, a page NAME.md
// (README.md) has its twin beside it, NAME.pt-BR.md.
//
// The docs of this project teach by linking to the exact file and function
// that implements each technique. A renamed file silently breaks that, so
// the check runs with the rest of the suite in `go test ./...`.
//
// The parser is deliberately small: inline links and images, reference
// definitions, headings with GitHub's anchor rules, fenced code and inline
// code skipped. It is not a Markdown implementation.
package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Unpaired returns the pages of one language without a twin in the other.
// en and pt are page paths relative to their language's root (docs/ and
// docs/pt-BR/), such as "workshop.md" or "techniques/outbox.md"; onlyEN
// lists the English pages with no translation, onlyPT the translations with
// no English page, both sorted.
func Unpaired(en, pt []string) (onlyEN, onlyPT []string) {
	for _, p := range en {
		if !slices.Contains(pt, p) {
			onlyEN = append(onlyEN, p)
		}
	}
	for _, p := range pt {
		if !slices.Contains(en, p) {
			onlyPT = append(onlyPT, p)
		}
	}
	slices.Sort(onlyEN)
	slices.Sort(onlyPT)
	return onlyEN, onlyPT
}

// RootPages sorts the names of the Markdown files at the repository's root
// into English pages and translations: NAME.pt-BR.md is the translation of
// NAME.md, and both come back as NAME.md, so that Unpaired pairs them
// (README.md and README.pt-BR.md). Names that are not Markdown are left out.
func RootPages(names []string) (en, pt []string) {
	for _, n := range names {
		if !strings.EqualFold(filepath.Ext(n), ".md") {
			continue
		}
		if base, ok := strings.CutSuffix(n, ptRootSuffix); ok {
			pt = append(pt, base+".md")
			continue
		}
		en = append(en, n)
	}
	return en, pt
}

// PTRootName is the name of the translation of the root page en:
// README.md's is README.pt-BR.md.
func PTRootName(en string) string {
	return strings.TrimSuffix(en, filepath.Ext(en)) + ptRootSuffix
}

const ptRootSuffix = ".pt-BR.md"

// Link is one link found in a Markdown file.
type Link struct {
	Line   int    // 1-based line number
	Target string // as written, e.g. ../internal/order/markpaid.go#L10 or #the-flow
}

// Relative reports whether the link points inside the repository (not a URL
// with a scheme such as https: or mailto:, and not protocol-relative).
func (l Link) Relative() bool {
	if strings.HasPrefix(l.Target, "//") {
		return false
	}
	u, err := url.Parse(l.Target)
	return err == nil && u.Scheme == ""
}

// Split returns the link's path (unescaped, without query) and its fragment.
// The path is empty for a link to a heading of the same file ("#flow").
func (l Link) Split() (path, fragment string) {
	target, fragment, _ := strings.Cut(l.Target, "#")
	target, _, _ = strings.Cut(target, "?")
	if p, err := url.PathUnescape(target); err == nil {
		target = p
	}
	return target, fragment
}

var (
	// [text](target) and ![alt](target), with an optional "title".
	inlineLink = regexp.MustCompile(`!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refDefinition = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	// `code` spans, removed before looking for links.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// ATX headings: # Title
	atxHeading = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	// <a id="x"> or <a name="x"> anchors.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// Links returns every link of a Markdown document, skipping fenced code
// blocks and inline code.
func Links(doc []byte) []Link {
	var links []Link
	forEachProseLine(doc, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		if m := refDefinition.FindStringSubmatch(line); m != nil {
			links = append(links, Link{Line: n, Target: strings.Trim(m[1], "<>")})
			return
		}
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{Line: n, Target: strings.Trim(m[1], "<>")})
		}
	})
	return links
}

// Anchors returns the fragments a document's headings and HTML anchors
// answer to, with GitHub's rules: the slug of each heading, and a -1, -2, ...
// suffix for repeated slugs.
func Anchors(doc []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	forEachProseLine(doc, func(_ int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	})
	return anchors
}

// Slug is GitHub's anchor for a heading text: lower case, Markdown links and
// emphasis reduced to their text, punctuation dropped except '-' and '_',
// spaces turned into '-'.
func Slug(heading string) string {
	heading = inlineLink.ReplaceAllStringFunc(heading, func(s string) string {
		open, close := strings.Index(s, "["), strings.Index(s, "](")
		return s[open+1 : close]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// forEachProseLine calls fn for each line outside fenced code blocks
// (``` or ~~~), with its 1-based number.
func forEachProseLine(doc []byte, fn func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			if i := strings.IndexFunc(trimmed, func(r rune) bool { return r != rune(trimmed[0]) }); i > 3 {
				fence = trimmed[:i]
			}
			continue
		}
		fn(n, line)
	}
}
