package doccheck_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

var updateTranscripts = flag.Bool("update", false, "rewrite the pages' console blocks with what their commands print now")

// A console block of a page shows what a command prints: its "$ " line is
// the command, the lines after it its output. TestTranscripts runs the
// command of every block it can run (runnable: orderpaid's and
// orderpaid-lab's own commands that need no server of the reader's:
// `scenario list`, `scenario run NAME` with --without, --matrix, --audit or
// --broker, and -h texts) with the binary the page names, orderpaid or
// orderpaid-lab, built from this tree, and fails, naming the page and the
// line, when the block is not what the command prints now. It ignores only what differs
// between runs: durations, ids, ports and temporary paths.
// go test ./internal/lab/doccheck -run TestTranscripts -update rewrites the
// blocks from the commands' output.
func TestTranscripts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pages' commands")
	}
	root := filepath.Join("..", "..", "..")
	blocks := consoleBlocks(t, root)
	dir := buildBinaries(t, root)
	bins := map[string]string{} // the name a page runs -> the binary built from this tree
	for _, name := range []string{"orderpaid", "orderpaid-lab"} {
		bins[name] = filepath.Join(dir, name)
	}
	printed := runAll(t, bins, blocks) // command -> its output, run once for every page that shows it
	checked := 0
	var stale []rewrite
	for _, b := range blocks {
		if !b.runnable() {
			continue
		}
		checked++
		got := make([]string, len(b.cmds))
		for i, c := range b.cmds {
			got[i] = printed[c.line]
		}
		var diffs []string
		for i, c := range b.cmds {
			if d := firstDifference(normalise(c.output), normalise(got[i])); d != "" {
				diffs = append(diffs, fmt.Sprintf("`%s`: %s", c.line, d))
			}
		}
		if len(diffs) == 0 {
			continue
		}
		if *updateTranscripts {
			stale = append(stale, rewrite{b, got})
			continue
		}
		t.Errorf("%s:%d: the console block no longer shows what its command prints (go test ./internal/lab/doccheck -run TestTranscripts -update rewrites it):\n  %s",
			b.page, b.line, strings.Join(diffs, "\n  "))
	}
	if checked == 0 {
		t.Fatal("no console block with a runnable command: the test checks nothing")
	}
	// The last block of a page first: rewriting one moves the lines after it.
	for i := len(stale) - 1; i >= 0; i-- {
		stale[i].b.rewrite(t, stale[i].got)
	}
	t.Logf("%d console blocks checked, %d commands run", checked, len(printed))
}

type rewrite struct {
	b   block
	got []string
}

// block is one ```console block of a page.
type block struct {
	page       string // relative to the repository's root
	path       string
	line       int // of the opening fence, 1-based
	start, end int // the block's lines (after the fence, before the closing fence), 0-based
	cmds       []command
}

// command is one "$ " line of a block and the output lines under it.
type command struct {
	line   string
	output []string
}

// runnable: every command of the block is one the test can run, after the
// batch mode's variables (CONSUMER_BATCH_SIZE, CONSUMER_POSITION) if it sets
// them. A block that also needs a server, curl or a shell's pipes is not
// checked here, nor `scenario run all`: its kill scenarios' execution
// counts vary from run to run, and it takes the longest.
var runnableCommand = regexp.MustCompile(`^((CONSUMER_BATCH_SIZE|CONSUMER_POSITION)=[a-z0-9-]+ )*(go run \./cmd/|bin/)?(orderpaid|orderpaid-lab) (scenario list|scenario run [a-z0-9-]+( --?without [a-z-]+| --?matrix| --?audit| --?broker (postgres|amqp|nats))*|[a-z-]+ -h|-h)$`)

func (b block) runnable() bool {
	if len(b.cmds) == 0 {
		return false
	}
	for _, c := range b.cmds {
		if !runnableCommand.MatchString(c.line) || strings.HasSuffix(c.line, "scenario run all") {
			return false
		}
	}
	return true
}

// consoleBlocks reads every ```console block of README*.md and docs/.
func consoleBlocks(t *testing.T, root string) []block {
	t.Helper()
	var pages []string
	readmes, _ := filepath.Glob(filepath.Join(root, "README*.md"))
	pages = append(pages, readmes...)
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	for _, path := range pages {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		lines := strings.Split(string(raw), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```console" {
				continue
			}
			b := block{page: filepath.ToSlash(rel), path: path, line: i + 1, start: i + 1}
			j := i + 1
			for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
				if cmd, ok := strings.CutPrefix(lines[j], "$ "); ok {
					b.cmds = append(b.cmds, command{line: strings.TrimSpace(cmd)})
				} else if len(b.cmds) > 0 {
					last := &b.cmds[len(b.cmds)-1]
					last.output = append(last.output, lines[j])
				}
			}
			b.end = j
			blocks = append(blocks, b)
			i = j
		}
	}
	return blocks
}

// runAll runs each runnable command of blocks once, two at a time (each
// scenario has a database and ports of its own), with bins, and returns what
// each printed.
func runAll(t *testing.T, bins map[string]string, blocks []block) map[string]string {
	t.Helper()
	var lines []string
	seen := map[string]bool{}
	for _, b := range blocks {
		if !b.runnable() {
			continue
		}
		for _, c := range b.cmds {
			if !seen[c.line] {
				seen[c.line] = true
				lines = append(lines, c.line)
			}
		}
	}
	outs := make([]string, len(lines))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 2)
	for i, line := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			outs[i] = run(t, bins, line)
		}()
	}
	wg.Wait()
	printed := make(map[string]string, len(lines))
	for i, line := range lines {
		printed[line] = outs[i]
	}
	return printed
}

// run runs one command line of a page with the binary of bins it names
// (orderpaid or orderpaid-lab, run as `go run ./cmd/NAME`, `bin/NAME` or
// `NAME`), on the test's PostgreSQL, and returns what it printed, standard
// output and error as one stream, as a terminal shows them.
func run(t *testing.T, bins map[string]string, line string) string {
	t.Helper()
	args := strings.Fields(line)
	var vars []string // CONSUMER_BATCH_SIZE=20 before the command
	for strings.Contains(args[0], "=") {
		vars, args = append(vars, args[0]), args[1:]
	}
	if args[0] == "go" {
		args = args[2:] // go run: ./cmd/NAME is the binary
	}
	// ./cmd/orderpaid-lab, bin/orderpaid, orderpaid: runnableCommand lets no
	// other through (and t.Fatal is not for runAll's goroutines).
	bin, ok := bins[filepath.Base(args[0])]
	if !ok {
		t.Errorf("%q: runs %s, neither orderpaid nor orderpaid-lab", line, args[0])
		return ""
	}
	args = args[1:]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "DATABASE_URL="+pgtest.AdminURL(), "BROKER=", "CONSUMER_BATCH_SIZE=", "CONSUMER_POSITION=")
	cmd.Env = append(cmd.Env, vars...) // the last of a name wins
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // a command that fails prints why: the block shows that, or differs
	return out.String()
}

var (
	durations = regexp.MustCompile(`\b\d+(\.\d+)?(µs|ms|s|m)\b|\b\d+m\d+(\.\d+)?s\b`)
	uuids     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	ports     = regexp.MustCompile(`(127\.0\.0\.1|localhost):\d+`)
	tmpPaths  = regexp.MustCompile(`/tmp/[A-Za-z0-9._/-]+`)
)

// normalise is text with what differs between runs of one command made
// alike, and the blank lines around it dropped.
func normalise(lines any) []string {
	var text string
	switch l := lines.(type) {
	case []string:
		text = strings.Join(l, "\n")
	case string:
		text = l
	}
	text = durations.ReplaceAllString(text, "DURATION")
	text = uuids.ReplaceAllString(text, "UUID")
	text = ports.ReplaceAllString(text, "$1:PORT")
	text = tmpPaths.ReplaceAllString(text, "TMP")
	var out []string
	for _, l := range strings.Split(text, "\n") {
		out = append(out, strings.TrimRight(l, " \t"))
	}
	for len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// firstDifference says where want and got part, "" when they do not.
func firstDifference(want, got []string) string {
	for i := 0; i < len(want) || i < len(got); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return fmt.Sprintf("output line %d: the page shows %q, the command prints %q", i+1, w, g)
		}
	}
	return ""
}

// rewrite puts got, each command's output, under its "$ " line in the page.
func (b block) rewrite(t *testing.T, got []string) {
	t.Helper()
	raw, err := os.ReadFile(b.path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var body []string
	for i, c := range b.cmds {
		body = append(body, "$ "+c.line)
		body = append(body, strings.Split(strings.TrimRight(got[i], "\n"), "\n")...)
	}
	out := append(append(append([]string{}, lines[:b.start]...), body...), lines[b.end:]...)
	if err := os.WriteFile(b.path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s:%d: rewritten", b.page, b.line)
}
