package childproc_test

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
)

// sh starts /bin/sh -c script as a child named name.
func sh(t *testing.T, name, script string) *childproc.Proc {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs /bin/sh")
	}
	p, err := childproc.Start("/bin/sh", t.TempDir(), name, []string{"PATH=" + os.Getenv("PATH")}, []string{"-c", script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

// A line is found whether it was printed before or after the wait began,
// and the exit status is kept.
func TestWaitLineAndExitCode(t *testing.T) {
	t.Parallel()
	p := sh(t, "lines", "echo one; sleep 0.2; echo 'two: 2'; exit 3")
	if line, err := p.WaitLine(t.Context(), "two:", 10*time.Second); err != nil || line != "two: 2" {
		t.Fatalf("WaitLine = %q, %v; want \"two: 2\"", line, err)
	}
	if _, err := p.WaitLine(t.Context(), "one", time.Second); err != nil {
		t.Fatalf("a line printed earlier is not found: %v", err)
	}
	if err := p.WaitExit(t.Context(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if code := p.ExitCode(); code != 3 {
		t.Errorf("ExitCode = %d, want 3", code)
	}
	_, err := p.WaitLine(t.Context(), "three", time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited (exit status 3)") || !strings.Contains(err.Error(), p.LogPath()) {
		t.Errorf("WaitLine after exit: %v, want the exit status and the log", err)
	}
	log, _ := os.ReadFile(p.LogPath())
	if !strings.Contains(string(log), "two: 2\n") || !strings.Contains(string(log), "# exited: exit status 3") {
		t.Errorf("log:\n%s", log)
	}
}

// A child that ignores SIGTERM is killed after the timeout, and says so.
func TestTerminateKillsAfterTimeout(t *testing.T) {
	t.Parallel()
	p := sh(t, "stubborn", "trap '' TERM; echo ready; while :; do sleep 1; done")
	if _, err := p.WaitLine(t.Context(), "ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	err := p.Terminate(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Fatalf("Terminate = %v, want killed after the timeout", err)
	}
	if !p.Exited() || p.ExitCode() != -1 {
		t.Errorf("Exited = %v, ExitCode = %d; want true, -1", p.Exited(), p.ExitCode())
	}
	if err := p.Terminate(time.Second); err != nil {
		t.Errorf("Terminate of an exited process: %v", err)
	}
}
