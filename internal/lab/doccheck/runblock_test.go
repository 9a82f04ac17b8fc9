package doccheck_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// outputCache holds what each block of a page printed, by the block's
// commands, for its twin.
type outputCache struct {
	mu   sync.Mutex
	outs map[string][]string
}

func newOutputCache() *outputCache { return &outputCache{outs: map[string][]string{}} }

// runBlock runs the commands of b in s and reports on t where the output
// differs from the page's. It says whether the block ran to its end.
func runBlock(t *testing.T, s *session, setup pageSetup, cache *outputCache, b block) bool {
	t.Helper()
	cmds := sessionCommands(b)
	key := ""
	for _, c := range cmds {
		key += c.line + "\n"
	}
	var cached []string
	if cache != nil {
		cache.mu.Lock()
		cached = cache.outs[key]
		cache.mu.Unlock()
	}
	var outs []string
	for i, c := range cmds {
		var got string
		if cached != nil {
			got = cached[i]
		} else {
			var err error
			if got, err = runCommand(s, setup, c); err != nil {
				t.Errorf("%s:%d: `%s`: %v\n%s", b.page, b.line, c.line, err, got)
				return false
			}
		}
		outs = append(outs, got)
		diffs, pairs := compareOutput(c.output, got)
		for _, p := range pairs {
			s.learn(p[0], p[1])
		}
		if len(diffs) > 0 {
			t.Errorf("%s:%d: `%s`: the console block is not what the command prints:\n  %s", b.page, b.line, c.line, strings.Join(diffs, "\n  "))
		}
	}
	if cache != nil && cached == nil {
		cache.mu.Lock()
		cache.outs[key] = outs
		cache.mu.Unlock()
	}
	return true
}

// runCommand runs one command of a page in s, after its setup's hook, with
// what the page spells substituted, and returns its output with the
// substitutions taken back.
func runCommand(s *session, setup pageSetup, c command) (string, error) {
	if hook := setup.beforeGo[c.line]; hook != nil {
		hook(s.t, s)
	}
	if hook := setup.before[c.line]; hook != "" {
		if out, rc, err := s.run(hook, time.Minute); err != nil || rc != 0 {
			return out, fmt.Errorf("the setup's step before it failed (exit %d, %v)", rc, err)
		}
	}
	line := s.substitute(c.line)
	if serverCommand.MatchString(c.line) {
		out, err := s.startServer(line, func(out string) bool {
			d, _ := compareOutput(c.output, s.unsubstitute(out))
			return len(d) == 0
		})
		return s.unsubstitute(out), err
	}
	out, _, err := s.run(line, 90*time.Second)
	return s.unsubstitute(out), err
}

// sessionCommands is the commands of b as bash reads them: a line ending in
// a backslash, or inside a quoted string, goes on on the next line.
func sessionCommands(b block) []command {
	var cmds []command
	for _, c := range b.cmds {
		line, out := c.line, c.output
		for len(out) > 0 && !complete(line) {
			line, out = line+"\n"+out[0], out[1:]
		}
		cmds = append(cmds, command{line: line, output: out})
	}
	return cmds
}

// complete: text is a whole command for bash, no quote left open, no
// backslash at its end.
func complete(text string) bool {
	quote := byte(0)
	for i := 0; i < len(text); i++ {
		switch ch := text[i]; {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			}
		case ch == '\\':
			if i == len(text)-1 {
				return false
			}
			i++
		case quote == '"':
			if ch == '"' {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		}
	}
	return quote == 0
}
