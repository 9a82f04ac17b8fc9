package doccheck_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// notRun is every console block the docs' tests do not run, keyed by its
// page (the English one; its pt-BR twin's block is meant too) and the text
// of its first command, with why, in one line. Every other block is checked:
// by TestTranscripts (runnableCommand), by TestStackBlocks (everything else,
// against a stack of its own), or by TestRunAllBlock.
var notRun = []struct{ page, cmd, reason string }{
	{"docs/performance.md", "orderpaid-lab bench --broker postgres --orders 6000 --repeat 3",
		"a measurement: seven runs of 6,000 orders (about an hour), its numbers that day's"},
	{"docs/performance.md", "orderpaid-lab bench --broker amqp --orders 6000",
		"a measurement: three runs of 6,000 orders on RabbitMQ, its numbers that day's"},
	{"docs/performance.md", "orderpaid-lab bench --broker nats --orders 6000",
		"a measurement: three runs of 6,000 orders on NATS, its numbers that day's"},
	{"docs/performance.md", "orderpaid-lab bench --broker kafka --orders 6000 --batch 100",
		"a measurement: five runs of 6,000 orders on the in-process Kafka cluster, its numbers that day's"},
	{"docs/performance.md", "orderpaid-lab bench --broker postgres --relay poll --orders 5000 --runs half",
		"a measurement: eight runs of 5,000 orders, one relay after the other, its numbers that day's"},
	{"docs/performance.md", "orderpaid-lab bench --broker postgres --relay logical --orders 5000 --runs half",
		"a measurement: the second round of the eight runs above, its numbers that day's"},
	{"docs/performance.md", "orderpaid-lab bench --broker postgres --orders 6000 --runs \"\" --inbox-rows 5000000",
		"a measurement: seeds 10,000,000 inbox rows before its runs, its numbers that day's"},
	{"docs/performance.md", "orderpaid-lab bench --broker postgres --orders 1000 --runs \"\" --backfill 1000000",
		"a measurement: a backfill of 1,000,000 orders (about 50 minutes), its numbers that day's"},
	{"docs/performance.md", "go test -run '^$' -bench AuditAndKeyClaimAtScale -benchtime 2000x ./internal/lab/bench",
		"a measurement: seeds up to 1,000,000 rows in each table (minutes per size), its numbers that day's"},
	{"docs/performance.md", "orderpaid-lab soak --orders 10000 --restart-postgres",
		"restarts the PostgreSQL server every test shares; 10,000 orders under faults take minutes"},
	{"docs/performance.md", "ORDERPAID_DISRUPTIVE=1 go test -count=1 -run TestSoakUnderFaults -v ./internal/lab/soak",
		"restarts the PostgreSQL server every test shares: scripts/test.sh runs it alone"},
	{"docs/performance.md", "orderpaid-lab soak --broker kafka",
		"10,000 orders under faults take minutes; TestSoakUnderFaultsOnKafka runs a small one"},
	{"docs/performance.md", "orderpaid-lab soak --broker kafka --batch 100",
		"10,000 orders under faults take minutes; TestSoakUnderFaultsOnKafka runs a small one"},
}

// minChecked is how many console blocks the tests must check at least.
const minChecked = 140

// enPage is the English page of a page: docs/pt-BR/x.md is docs/x.md,
// README.pt-BR.md is README.md.
func enPage(page string) string {
	if strings.HasPrefix(page, "docs/pt-BR/") {
		return "docs/" + strings.TrimPrefix(page, "docs/pt-BR/")
	}
	return strings.Replace(page, ".pt-BR.md", ".md", 1)
}

// notRunReason is why b is not run, "" when it is.
func notRunReason(b block) string {
	if len(b.cmds) == 0 {
		return ""
	}
	for _, n := range notRun {
		if n.page == enPage(b.page) && n.cmd == b.cmds[0].line {
			return n.reason
		}
	}
	return ""
}

// Every console block is checked by a test or listed in notRun with its
// reason, every entry of notRun names a block that exists, and at least
// minChecked blocks are checked.
func TestEveryConsoleBlockIsCheckedOrListed(t *testing.T) {
	blocks := consoleBlocks(t, filepath.Join("..", "..", ".."))
	used := map[int]bool{}
	checked, listed := 0, 0
	for _, b := range blocks {
		if len(b.cmds) == 0 {
			t.Errorf("%s:%d: a console block without a \"$ \" command: the tests cannot run it", b.page, b.line)
			continue
		}
		found := false
		for i, n := range notRun {
			if n.page == enPage(b.page) && n.cmd == b.cmds[0].line {
				used[i], found = true, true
			}
		}
		if found && b.runnable() {
			t.Errorf("%s:%d: listed in notRun, but TestTranscripts runs it: take it off the list", b.page, b.line)
		}
		if found {
			listed++
		} else {
			checked++
		}
	}
	for i, n := range notRun {
		if !used[i] {
			t.Errorf("notRun lists %s `%s`, a block no page has any more: take it off the list", n.page, n.cmd)
		}
	}
	t.Logf("%d console blocks: %d checked (TestTranscripts, TestStackBlocks, TestRunAllBlock), %d not run, each with its reason", len(blocks), checked, listed)
	if checked < minChecked {
		t.Errorf("%d console blocks checked, want at least %d", checked, minChecked)
	}
}
