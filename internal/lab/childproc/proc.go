// Package childproc is a real child process running the orderpaid binary,
// with its own PID, that the tests, the scenarios, the benchmark and the soak
// start, SIGKILL, SIGTERM or let crash. Its stdout is collected line by line
// (so a caller can wait for "listening on") and, with its stderr, written to
// a log file that every error points to. On Linux the kernel kills the child
// if the parent dies, so an interrupted run leaves no process behind.
// FreeAddr picks the ports the children listen on and Build builds the
// binary the tests start.
package childproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one running (or exited) child process.
type Proc struct {
	// Name is how the process is called in errors, reports and its log file.
	Name string
	cmd  *exec.Cmd
	log  *os.File

	mu    sync.Mutex
	lines []string      // its stdout, line by line
	added chan struct{} // closed and replaced whenever a line arrives
	done  chan struct{} // closed once the process has exited and been reaped
	err   error         // what Wait returned; read only after done
}

// Start starts bin with args and exactly env (nothing inherited), its stdout
// and stderr going to dir/<name>.log (appended to, if it exists).
func Start(bin, dir, name string, env, args []string) (*Proc, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create log of %s: %w", name, err)
	}
	fmt.Fprintf(logFile, "$ orderpaid %s\n", strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = logFile
	cmd.SysProcAttr = childAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("pipe stdout of %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &Proc{Name: name, cmd: cmd, log: logFile, added: make(chan struct{}), done: make(chan struct{})}
	go p.read(stdout)
	return p, nil
}

// PID is the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// LogPath is the file holding the process's output.
func (p *Proc) LogPath() string { return p.log.Name() }

// read collects stdout lines until the pipe closes, then reaps the process.
func (p *Proc) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(p.log, line)
		p.mu.Lock()
		p.lines = append(p.lines, line)
		close(p.added)
		p.added = make(chan struct{})
		p.mu.Unlock()
	}
	p.err = p.cmd.Wait()
	fmt.Fprintf(p.log, "# exited: %s\n", exitText(p.err))
	p.log.Close()
	close(p.done)
}

// WaitLine waits for a stdout line starting with prefix and returns it.
func (p *Proc) WaitLine(ctx context.Context, prefix string, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	for seen := 0; ; {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if strings.HasPrefix(p.lines[seen], prefix) {
				line := p.lines[seen]
				p.mu.Unlock()
				return line, nil
			}
		}
		added := p.added
		p.mu.Unlock()
		select {
		case <-added:
		case <-p.done:
			return "", fmt.Errorf("%s exited (%s) before printing %q; see %s", p.Name, exitText(p.err), prefix, p.LogPath())
		case <-deadline:
			return "", fmt.Errorf("%s printed no %q line within %s; see %s", p.Name, prefix, timeout, p.LogPath())
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitCode is the process's exit status, -1 while it runs or when a signal
// ended it.
func (p *Proc) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// WaitExit waits for the process to end by itself (a crash fault point).
func (p *Proc) WaitExit(ctx context.Context, timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %s; see %s", p.Name, timeout, p.LogPath())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kill sends SIGKILL, as the OOM killer or a lost node would, and waits for
// the process to be gone.
func (p *Proc) Kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", p.Name, err)
	}
	<-p.done
	return nil
}

// Terminate sends SIGTERM, as `docker compose stop` or a rolling deploy does,
// and waits up to timeout for a graceful exit; then it kills the process and
// says so. A process that has already exited is left as it is.
func (p *Proc) Terminate(timeout time.Duration) error {
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", p.Name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.Kill()
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed; see %s", p.Name, timeout, p.LogPath())
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
