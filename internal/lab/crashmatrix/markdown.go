package crashmatrix

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// The published page (docs/crash-matrix.md) is made from a run: these
// print its tables.

// WriteMarkdown prints the guards-on table as Markdown, a row per boundary,
// each linked to the line of code it sits on (Locate; root is the
// repository, links are relative to docs/).
// The cells of a COMMIT's lost answer (LostCells) have a table of their own:
// a row per COMMIT, its one side.
func WriteMarkdown(w io.Writer, outcomes []Outcome, root string) error {
	lost := lostAnswers(outcomes)
	if lost {
		fmt.Fprintln(w, "| flow | COMMIT | its answer lost, the process alive | code |")
		fmt.Fprintln(w, "|---|---|---|---|")
	} else {
		fmt.Fprintln(w, "| flow | boundary | dies before | dies after | code |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
	}
	seen := map[string]bool{}
	for _, o := range outcomes {
		b := o.Cell.Boundary
		if seen[b] {
			continue
		}
		seen[b] = true
		sides := map[fault.When]string{fault.After: "-"}
		for _, p := range outcomes {
			if p.Cell.Boundary == b {
				sides[p.Cell.Side] = Verdict(p)
			}
		}
		code := "-"
		if path, line := Locate(root, b); path != "" {
			code = fmt.Sprintf("[%s:%d](../%s#L%d)", filepath.Base(path), line, path, line)
		}
		cols := sides[fault.Before] + " | " + sides[fault.After]
		if lost {
			cols = sides[fault.Lost]
		}
		if _, err := fmt.Fprintf(w, "| %s | `%s` | %s | %s |\n", o.Cell.Flow(), b, cols, code); err != nil {
			return err
		}
	}
	return nil
}

// WriteDamageMarkdown prints, for each guard switched off, the cells whose
// effects were not once, and what they showed; and how many cells the
// guard's absence kept from their boundary (not reached: its statement is
// not run without it). A guard switched off under other providers than p
// (GuardProviders), or with the guard above it off too (Beneath), says so.
func WriteDamageMarkdown(w io.Writer, byGuard map[string][]Outcome, guards []string, p Providers) error {
	fmt.Fprintln(w, "| guard off | cells damaged | not reached | where, and what (first three) |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, g := range guards {
		var hit []string
		skipped := 0
		for _, o := range byGuard[g] {
			if o.NotReached {
				skipped++
			}
			if Damaged(o) {
				hit = append(hit, fmt.Sprintf("`%s` %s: %s", o.Cell.Boundary, o.Cell.Side, strings.Join(o.Damage, ", ")))
			}
		}
		where := "**none**: no cell shows this guard's damage"
		if len(hit) > 0 {
			where = strings.Join(hit[:min(3, len(hit))], "; ")
		}
		name := "`" + g + "`"
		if above := Beneath[g]; len(byGuard[g]) > 0 && strings.Contains(byGuard[g][0].Without, ",") {
			name += " (with `" + above + "` off too)"
		}
		if gp := GuardProviders(g, p); gp != p {
			name += " (" + gp.String() + ")"
		}
		if _, err := fmt.Fprintf(w, "| %s | %d of %d | %d | %s |\n", name, len(hit), len(byGuard[g]), skipped, where); err != nil {
			return err
		}
	}
	return nil
}

// Locate finds the line of code a boundary sits on, relative to root: a
// sqlc query's definition in sql/queries, a provider call's request in the
// service's client, the outbox's write. BEGIN, COMMIT, watermill's own SQL
// and a work's end have no single line: "".
func Locate(root, boundary string) (path string, line int) {
	span := boundary[strings.LastIndex(boundary, "/")+1:]
	if i := strings.LastIndex(span, "#"); i >= 0 {
		span = span[:i]
	}
	if method, target, ok := strings.Cut(boundaryCall(boundary), " "); ok {
		// "POST /charges": the client line that sends it.
		verb := map[string]string{"POST": "post", "GET": "lookup"}[method]
		return grepGo(root, func(l string) bool {
			return strings.Contains(l, `"`+target+`"`) && strings.Contains(strings.ToLower(l), verb)
		})
	}
	if topic, ok := strings.CutPrefix(span, "outbox_write "); ok && topic != "" {
		return grepGo(root, func(l string) bool { return strings.Contains(l, `"outbox_write "`) })
	}
	if span == "" || strings.ToUpper(span) == span || span == "end" {
		return "", 0
	}
	if strings.Contains(span, " ") {
		// A span of the service's own ("slot confirm"): the line that
		// starts it.
		return grepGo(root, func(l string) bool { return strings.Contains(l, `"`+span+`"`) && strings.Contains(l, "Start(") })
	}
	return grepFiles(root, "sql/queries", ".sql", func(l string) bool {
		f := strings.Fields(strings.TrimPrefix(l, "-- name:"))
		return strings.HasPrefix(l, "-- name:") && len(f) > 0 && f[0] == span
	})
}

// boundaryCall is the span of a boundary that is an HTTP call ("POST
// /charges"), or "".
func boundaryCall(boundary string) string {
	parts := strings.SplitN(boundary, "/", 3)
	if len(parts) < 3 {
		return ""
	}
	span := parts[2]
	if i := strings.LastIndex(span, "#"); i >= 0 {
		span = span[:i]
	}
	if strings.HasPrefix(span, "POST /") || strings.HasPrefix(span, "GET /") {
		return span
	}
	return ""
}

// grepGo finds the first line of the service's own Go code (not tests, not
// the lab, not the operator's commands) that match accepts.
func grepGo(root string, match func(string) bool) (string, int) {
	return grepFiles(root, "internal", ".go", match)
}

func grepFiles(root, dir, ext string, match func(string) bool) (string, int) {
	var found string
	var at int
	skip := []string{"internal/lab", "internal/ops"}
	filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if slices.Contains(skip, filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ext) || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			if match(sc.Text()) {
				found, at = filepath.ToSlash(rel), n
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found, at
}
