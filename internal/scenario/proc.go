package scenario

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

// proc is one child process running the orderpaid binary: a real process,
// with its own PID, that the scenario can SIGKILL, SIGTERM or let crash.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File

	mu    sync.Mutex
	lines []string      // its stdout, line by line
	added chan struct{} // closed and replaced whenever a line arrives
	done  chan struct{} // closed when the process has exited
	err   error         // what Wait returned
}

// startProc starts bin with args and env (nothing inherited), writing its
// stdout and stderr to dir/name.log.
func startProc(bin, dir, name string, env, args []string) (*proc, error) {
	logFile, err := os.Create(filepath.Join(dir, name+".log"))
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
	p := &proc{name: name, cmd: cmd, log: logFile, added: make(chan struct{}), done: make(chan struct{})}
	go p.read(stdout)
	return p, nil
}

// read collects stdout lines until the pipe closes, then reaps the process.
func (p *proc) read(stdout io.Reader) {
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
	err := p.cmd.Wait()
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
	fmt.Fprintf(p.log, "# exited: %v\n", exitText(err))
	p.log.Close()
	close(p.done)
}

// waitLine waits for a stdout line starting with prefix and returns it.
func (p *proc) waitLine(ctx context.Context, prefix string, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	seen := 0
	for {
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
			return "", fmt.Errorf("%s exited (%s) before printing %q; see %s", p.name, exitText(p.exitErr()), prefix, p.log.Name())
		case <-deadline:
			return "", fmt.Errorf("%s printed no %q line within %s; see %s", p.name, prefix, timeout, p.log.Name())
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func (p *proc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode is the process's exit status, -1 while it runs or when a signal
// ended it.
func (p *proc) exitCode() int {
	if !p.exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// kill sends SIGKILL, as the OOM killer or a node failure would, and waits
// for the process to be gone.
func (p *proc) kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// terminate sends SIGTERM, as `docker compose stop` or a rolling deploy does,
// and waits up to timeout for a graceful exit; then it kills.
func (p *proc) terminate(timeout time.Duration) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.kill()
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed; see %s", p.name, timeout, p.log.Name())
	}
}

// waitExit waits for the process to end by itself (a crash fault point).
func (p *proc) waitExit(ctx context.Context, timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %s; see %s", p.name, timeout, p.log.Name())
	case <-ctx.Done():
		return ctx.Err()
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
