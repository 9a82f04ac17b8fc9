package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/version"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The setup check a workshop participant runs first (`orderpaid doctor`):
// every thing the demo, the lab and the scenarios need from the machine, each
// checked for real (connect, authenticate, listen) and reported on one line
// with what to do when it fails. It changes nothing: it creates no database,
// starts no server and leaves every port as it found it.

// minGoVersion is go.mod's go line, for a doctor run outside the repository
// (where go.mod cannot be read). TestDoctorMinGoVersionIsGoMod keeps the two
// equal.
const minGoVersion = "1.26.8"

// checkResult is one line of the doctor's report.
type checkResult struct {
	name   string
	status string // statusOK, statusFail or statusSkip
	detail string // what was found; for a failure, what to do about it
}

const (
	statusOK   = "ok"
	statusFail = "FAIL"
	statusSkip = "skip" // not checked, because a check it depends on failed
)

func ok(name, format string, args ...any) checkResult {
	return checkResult{name, statusOK, fmt.Sprintf(format, args...)}
}

func fail(name, format string, args ...any) checkResult {
	return checkResult{name, statusFail, fmt.Sprintf(format, args...)}
}

func runDoctor(e Env) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 5*time.Second, "how long each connection may take")
	if err := ParseFlags(fs, e, "[--timeout D]\n\nChecks what the demo, the lab and the scenarios need: Go, PostgreSQL at DATABASE_URL\n"+
		"(reachable, authentication, the database, CREATEDB, no replication slot left without a reader), the broker\n"+
		"chosen by BROKER, and that HTTP_ADDR and FAKES_ADDR are free. One line per check, with what to do when it\n"+
		"fails; exit 0 when all pass, 1 otherwise."); err != nil {
		return HelpOK(err)
	}
	if *timeout <= 0 {
		return UsageError{fmt.Errorf("doctor: --timeout %s: want a positive duration such as 5s", *timeout)}
	}
	results := doctorChecks(e.Ctx, e.Getenv, *timeout)
	failed := 0
	for _, r := range results {
		fmt.Fprintf(e.Stdout, "%-4s  %-16s %s\n", r.status, r.name, r.detail)
		if r.status == statusFail {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed: fix what the FAIL lines say, then run `orderpaid doctor` again", failed, len(results))
	}
	fmt.Fprintf(e.Stdout, "\nall %d checks passed: `make demo` (or `orderpaid-lab all`) runs here.\n", len(results))
	return nil
}

// doctorChecks runs every check in order. A configuration the process would
// refuse is the one failure that stops the rest: the other checks read it.
func doctorChecks(ctx context.Context, getenv func(string) string, timeout time.Duration) []checkResult {
	results := []checkResult{checkGo(ctx, timeout)}
	cfg, err := config.Load(getenv)
	if err != nil {
		return append(results, fail("configuration", "%v", err))
	}
	results = append(results, ok("configuration", "DATABASE_URL=%s BROKER=%s%s", config.RedactURL(cfg.DatabaseURL), cfg.Broker, prefixNote(cfg)))
	results = append(results, checkPostgres(ctx, cfg.DatabaseURL, timeout)...)
	results = append(results, checkBroker(ctx, cfg, timeout))
	if cfg.OutboxRelay == config.RelayLogical {
		results = append(results, checkOnDatabase(ctx, "OUTBOX_RELAY", cfg.DatabaseURL, timeout, checkOutboxRelay))
	}
	results = append(results, checkOnDatabase(ctx, "slots", cfg.DatabaseURL, timeout, func(ctx context.Context, conn *pgx.Conn) checkResult {
		return checkSlots(ctx, conn, cfg)
	}))
	results = append(results,
		checkPort("HTTP_ADDR", cfg.HTTPAddr, cfg.FakesAddr, "/healthz", "an orderpaid api", wiringNote("WEBHOOK_URL", cfg.WebhookURL, cfg.HTTPAddr, "/webhooks/payments", getenv)),
		checkPort("FAKES_ADDR", cfg.FakesAddr, cfg.HTTPAddr, "/charges", "orderpaid-lab fakes", wiringNote("FAKES_URL", cfg.FakesURL, cfg.FakesAddr, "", getenv)),
	)
	return results
}

func prefixNote(cfg config.Config) string {
	if cfg.BrokerPrefix == "" {
		return ""
	}
	return " BROKER_PREFIX=" + cfg.BrokerPrefix
}

// checkGo compares this binary's Go and the `go` on PATH with go.mod's go
// line. The binary's Go can hardly be too old (the toolchain that built it
// read go.mod); the one on PATH can, and `make demo`, the tests and the
// scenarios' builds use it. An older one fetches the right toolchain by
// itself (GOTOOLCHAIN=auto) only with the network, so it fails here.
func checkGo(ctx context.Context, timeout time.Duration) checkResult {
	want, from := goModVersion()
	binary := runtime.Version()
	path, err := exec.LookPath("go")
	if err != nil {
		return fail("Go", "no `go` on PATH (this binary: %s): install Go %s or newer and put its bin directory on PATH; make demo and the tests build with it", binary, want)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "env", "GOVERSION")
	// Outside any module and with GOTOOLCHAIN=local, the installed Go
	// answers, not a newer one it would switch to.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	onPath := strings.TrimSpace(string(out))
	if err != nil || !version.IsValid(onPath) {
		return fail("Go", "`%s env GOVERSION` failed (%v %q): reinstall Go %s or newer", path, err, onPath, want)
	}
	if version.Compare(onPath, "go"+want) < 0 {
		return fail("Go", "`go` on PATH (%s) is %s, %s wants go %s: install Go %s or newer (or, with the network, let GOTOOLCHAIN=auto download it on the first build)",
			path, onPath, from, want, want)
	}
	if version.Compare(binary, "go"+want) < 0 {
		return fail("Go", "this binary was built with %s, %s wants go %s: rebuild it (make build)", binary, from, want)
	}
	return ok("Go", "%s on PATH (%s), this binary %s; %s wants go %s", onPath, path, binary, from, want)
}

// goModVersion returns the go line of this repository's go.mod, found in the
// working directory or above it, and where it was read; minGoVersion outside
// the repository.
func goModVersion() (want, from string) {
	dir, err := os.Getwd()
	for err == nil {
		if v := goLine(filepath.Join(dir, "go.mod")); v != "" {
			return v, "go.mod"
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return minGoVersion, "this repository"
}

// goLine returns the go line of path when it is orderpaid's go.mod.
func goLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var module, goVersion string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "module" {
			module = fields[1]
		}
		if len(fields) == 2 && fields[0] == "go" {
			goVersion = fields[1]
		}
	}
	if module != "github.com/orderpaid/orderpaid" {
		return ""
	}
	return goVersion
}

// checkPort listens on addr (HTTP_ADDR or FAKES_ADDR) and lets it go again.
// When it is taken, it asks the port whether an orderpaid process is there
// (GET probe), the usual case in a workshop: one left running from the last
// exercise.
func checkPort(name, addr, other, probe, who, note string) checkResult {
	if addr == other {
		return fail(name, "%s is also the other listen address (HTTP_ADDR and FAKES_ADDR must differ): set %s=:%s", addr, name, suggestPort(addr))
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
		return ok(name, "%s is free%s", addr, note)
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fail(name, "cannot listen on %s: %v: set %s to a host:port this machine has, such as :%s", addr, err, name, suggestPort(addr))
	}
	_, port, _ := net.SplitHostPort(addr)
	what := "another program"
	client := http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get("http://" + net.JoinHostPort("127.0.0.1", port) + probe); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			what = who + " (left running? stop it with Ctrl-C or kill its pid)"
		}
	}
	return fail(name, "%s is taken by %s (`ss -ltnp 'sport = :%s'` shows which): stop it, or set %s=:%s",
		addr, what, port, name, suggestPort(addr))
}

// suggestPort proposes another port: the same one plus 10000, below the
// ephemeral range.
func suggestPort(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	var n int
	if _, err := fmt.Sscan(port, &n); err != nil || n <= 0 || n+10000 > 32767 {
		return "18080"
	}
	return fmt.Sprint(n + 10000)
}

// wiringNote says what separate processes need when a listen address moved
// and the URL that reaches it (FAKES_URL, WEBHOOK_URL) still has the default:
// `orderpaid-lab all` wires itself to the ports it binds, `orderpaid api` and
// `orderpaid-lab fakes` in two terminals do not.
func wiringNote(urlVar, url, addr, path string, getenv func(string) string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || getenv(urlVar) != "" || strings.HasSuffix(strings.TrimSuffix(url, path), ":"+port) {
		return ""
	}
	return fmt.Sprintf("; separate api and fakes processes also need %s=http://localhost:%s%s (`orderpaid-lab all` wires itself)", urlVar, port, path)
}
