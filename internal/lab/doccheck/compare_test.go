package doccheck_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

var (
	timestamps = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	// ids is what names one thing of one run: a UUID, a charge, refund or
	// event of the fake gateway.
	ids     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b(ch|re|evt)_[0-9a-f]{24}\b`)
	hex8    = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
	spaces  = regexp.MustCompile(`\s+`)
	dbNames = regexp.MustCompile(`\b(orderpaid_[a-z]+_)[0-9a-f]{8,12}\b`)
	// rates and the HTTP Date header vary with the run's time.
	rates    = regexp.MustCompile(`\b\d+(\.\d+)? cells a minute\b`)
	httpDate = regexp.MustCompile(`^Date: .* GMT$`)
)

// plain is a line of output with what differs between runs made alike:
// times, durations, ids (and the 8-digit prefixes psql shows of them), ports,
// temporary paths and databases, and the width of columns.
func plain(line string) string {
	line = timestamps.ReplaceAllString(line, "TIME")
	line = ids.ReplaceAllString(line, "ID")
	if n := normalise(line); len(n) == 1 {
		line = n[0]
	}
	line = hex8.ReplaceAllString(line, "HEX")
	line = dbNames.ReplaceAllString(line, "${1}X")
	line = rates.ReplaceAllString(line, "N cells a minute")
	line = httpDate.ReplaceAllString(strings.TrimSpace(line), "Date: DATE")
	return strings.TrimSpace(spaces.ReplaceAllString(line, " "))
}

// compareOutput says where got, what a command printed, differs from want,
// the lines a page shows under it, and pairs each id the page shows with the
// one this run printed in its place. A line "..." of want stands for any
// lines. A JSON line is compared by its keys, and by its values but for ids
// and times; the audit (GET /orders/{id}/audit) by its keys only, since its
// counts are those of the reader's history.
func compareOutput(want []string, got string) (diffs []string, pairs [][2]string) {
	w, g := trimBlank(want), trimBlank(strings.Split(got, "\n"))
	if slices.ContainsFunc(w, func(l string) bool { return strings.TrimSpace(l) == "..." }) {
		return compareElided(w, g)
	}
	for i := 0; i < len(w) && i < len(g); i++ {
		d, p := compareLine(w[i], g[i])
		if d != "" {
			diffs = append(diffs, fmt.Sprintf("output line %d: %s", i+1, d))
		}
		pairs = append(pairs, p...)
	}
	if len(w) != len(g) {
		diffs = append(diffs, fmt.Sprintf("the page shows %d lines, the command prints %d:\n%s", len(w), len(g), strings.Join(g, "\n")))
	}
	return diffs, pairs
}

// compareElided: every line of want but "..." is in got, in that order.
func compareElided(w, g []string) (diffs []string, pairs [][2]string) {
	j := 0
	for _, l := range w {
		if strings.TrimSpace(l) == "..." {
			continue
		}
		for ; j < len(g); j++ {
			if d, p := compareLine(l, g[j]); d == "" {
				pairs = append(pairs, p...)
				break
			}
		}
		if j == len(g) {
			return append(diffs, fmt.Sprintf("the page shows %q, the command prints no such line after the ones before it:\n%s", l, strings.Join(g, "\n"))), pairs
		}
		j++
	}
	return nil, pairs
}

func trimBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// compareLine compares one line of the page with one the command printed.
func compareLine(want, got string) (string, [][2]string) {
	wj, wok := jsonValue(want)
	gj, gok := jsonValue(got)
	if wok && gok {
		audit := false
		if m, ok := wj.(map[string]any); ok {
			_, audit = m["effects"]
		}
		var diffs []string
		pairs := compareJSON("", wj, gj, audit, &diffs)
		if len(diffs) > 0 {
			return strings.Join(diffs, "; ") + fmt.Sprintf(" (the command prints %s)", got), pairs
		}
		return "", pairs
	}
	if plain(want) != plain(got) {
		return fmt.Sprintf("the page shows %q, the command prints %q", want, got), nil
	}
	return "", pairIDs(want, got)
}

// pairIDs pairs the ids of want and got in order, when they have as many.
func pairIDs(want, got string) [][2]string {
	w, g := ids.FindAllString(want, -1), ids.FindAllString(got, -1)
	if len(w) != len(g) {
		return nil
	}
	var pairs [][2]string
	for i := range w {
		pairs = append(pairs, [2]string{w[i], g[i]})
	}
	return pairs
}

func jsonValue(line string) (any, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "{") && !strings.HasPrefix(line, "[") {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader([]byte(line)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return nil, false
	}
	return v, true
}

// compareJSON appends to diffs where got differs from want: keys always,
// values unless keysOnly.
func compareJSON(path string, want, got any, keysOnly bool, diffs *[]string) (pairs [][2]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: the page shows an object", path))
			return nil
		}
		if wk, gk := keys(w), keys(g); !slices.Equal(wk, gk) {
			*diffs = append(*diffs, fmt.Sprintf("%s: the page shows the keys %v, the command prints %v", orRoot(path), wk, gk))
		}
		for _, k := range keys(w) {
			if gv, ok := g[k]; ok {
				pairs = append(pairs, compareJSON(path+"."+k, w[k], gv, keysOnly, diffs)...)
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || (!keysOnly && len(g) != len(w)) {
			*diffs = append(*diffs, fmt.Sprintf("%s: the page shows %d elements, the command prints %v", orRoot(path), len(w), got))
			return nil
		}
		for i := 0; i < len(w) && i < len(g); i++ {
			pairs = append(pairs, compareJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], keysOnly, diffs)...)
		}
	default:
		ws, gs := fmt.Sprint(want), fmt.Sprint(got)
		if !keysOnly && plain(ws) != plain(gs) {
			*diffs = append(*diffs, fmt.Sprintf("%s: the page shows %s, the command prints %s", orRoot(path), ws, gs))
		}
		return pairIDs(ws, gs)
	}
	return pairs
}

func keys(m map[string]any) []string {
	k := make([]string, 0, len(m))
	for key := range m {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

func orRoot(path string) string {
	if path == "" {
		return "the JSON"
	}
	return strings.TrimPrefix(path, ".")
}
