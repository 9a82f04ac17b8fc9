package doccheck_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
)

// TestStackBlocks runs every console block TestTranscripts does not (curl and
// psql sessions, migrate, backfill, reprocess, retention, reconcile, the
// processes' refusals, the model and the crash matrix's cells), but for those
// notRun lists, page by page in the page's order, in one bash per page (the
// reader's terminal), after the page's setup (setups: by default
// `orderpaid-lab all` on a fresh database and free ports, which the commands
// reach through API_URL, FAKES_URL and DATABASE_URL; ports, databases and ids
// the page spells out are substituted). Each command's output is compared
// with the page's: every line, with times, durations, ids, ports and column
// widths made alike, HTTP status lines included; a JSON line by its keys and
// values, the audit by its keys. An id the page shows (an order's, a
// charge's) is the one this run printed in its place for the commands after
// it.
func TestStackBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts stacks and runs the pages' commands")
	}
	pgtest.Require(t)
	root, _ := filepath.Abs(filepath.Join("..", "..", ".."))
	bins := buildBinaries(t, root)
	var byPage [][]block // each page's blocks to run, the pages in order
	for _, b := range consoleBlocks(t, root) {
		if b.runnable() || notRunReason(b) != "" || isRunAll(b) {
			continue
		}
		if n := len(byPage); n > 0 && byPage[n-1][0].page == b.page {
			byPage[n-1] = append(byPage[n-1], b)
		} else {
			byPage = append(byPage, []block{b})
		}
	}
	var checked atomic.Int64
	slots := make(chan struct{}, 2)
	shared := map[string]*outputCache{}
	t.Run("pages", func(t *testing.T) {
		for _, blocks := range byPage {
			page := blocks[0].page
			setup := setups[enPage(page)]
			cache := (*outputCache)(nil)
			if setup.twinsShare {
				if shared[enPage(page)] == nil {
					shared[enPage(page)] = newOutputCache()
				}
				cache = shared[enPage(page)]
			}
			t.Run(page, func(t *testing.T) {
				if !setup.twinsShare {
					t.Parallel()
				}
				slots <- struct{}{}
				defer func() { <-slots }()
				s := newPageSession(t, root, bins, setup)
				for _, b := range blocks {
					if runBlock(t, s, setup, cache, b) {
						checked.Add(1)
					}
				}
			})
		}
	})
	t.Logf("%d console blocks checked against a stack or the binaries, on %d pages", checked.Load(), len(byPage))
}

// newPageSession starts the bash of one page: its databases, its stack, its
// fixture, their substitutions.
func newPageSession(t *testing.T, root, bins string, setup pageSetup) *session {
	t.Helper()
	_, dbURL := pgtest.NewDatabase(t)
	api, fakes, spare := freeAddr(t), freeAddr(t), freeAddr(t)
	docDB := "orderpaid_doc_" + tempdb.RandomHex(6)
	t.Cleanup(func() { _ = tempdb.Drop(pgtest.AdminURL(), docDB) })
	env := []string{
		"PATH=" + bins + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"GOCACHE=" + goEnv(t, "GOCACHE"), "GOMODCACHE=" + goEnv(t, "GOMODCACHE"), "GOFLAGS=-mod=mod", "LC_ALL=C.UTF-8",
		"ORDERPAID_BIN=" + bins, "DATABASE_URL=" + dbURL, "API_ADDR=" + api, "FAKES_ADDR=" + fakes,
		"API_URL=http://" + api, "FAKES_URL=http://" + fakes, "HTTP_ADDR=" + spare[strings.LastIndex(spare, ":"):], "DOC_DB=" + docDB,
	}
	dir := t.TempDir()
	if setup.inRepo {
		dir = root
	}
	s := startSession(t, dir, env)
	for _, name := range setup.empty {
		actual := "orderpaid_doc_" + tempdb.RandomHex(6)
		url, err := tempdb.Create(context.Background(), pgtest.AdminURL(), actual)
		if err != nil {
			t.Fatalf("create database %s: %v", actual, err)
		}
		t.Cleanup(func() { _ = tempdb.Drop(pgtest.AdminURL(), actual) })
		s.learn("postgres://postgres@localhost:5432/"+name+"?sslmode=disable", url)
	}
	stack := setup.stack
	if stack == "" {
		stack = startAll
	}
	for _, script := range []string{stack, setup.fixture} {
		if script == "" {
			continue
		}
		out, rc, err := s.run(script, 2*time.Minute)
		if err != nil || rc != 0 || strings.Contains(out, "FIXTURE FAILED") {
			t.Fatalf("the page's setup failed (exit %d, %v):\n%s\n%s", rc, err, script, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if p, ok := strings.CutPrefix(line, "SUBST "); ok {
				page, actual, _ := strings.Cut(p, "=")
				s.learn(page, actual)
			}
		}
	}
	return s
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := childproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
