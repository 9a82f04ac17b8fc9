package doccheck

import (
	"regexp"
	"strings"
	"testing"
)

// hardCoded matches what a command must not spell out: the default ports of
// the API and the fakes, and the default database. A participant who runs
// on other ports, or on a database of their own, would get an answer from
// the wrong process, or silently query the wrong database.
var hardCoded = regexp.MustCompile(`(localhost|127\.0\.0\.1):(8080|8081)\b|@(localhost|127\.0\.0\.1):5432/postgres\b`)

// Every curl and psql command in the docs reads API_URL, FAKES_URL and
// DATABASE_URL, so that it works on any ports and any database; prose may
// still name the defaults.
func TestDocCommandsReadTheAddressesFromTheEnvironment(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	eachMarkdown(t, root, func(rel, _ string, doc []byte) {
		for n, line := range strings.Split(string(doc), "\n") {
			if !strings.Contains(line, "curl ") && !strings.Contains(line, "psql ") {
				continue
			}
			checked++
			if m := hardCoded.FindString(line); m != "" {
				t.Errorf("%s:%d: a command names %s: use $API_URL, $FAKES_URL or \"$DATABASE_URL\"", rel, n+1, m)
			}
		}
	})
	if checked < 20 {
		t.Fatalf("only %d command lines found: the walk is broken", checked)
	}
}
