package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
)

// Proc is one child process running the orderpaid binary, which the
// benchmark measures and the soak SIGKILLs: a childproc.Proc plus its peak
// RSS, which /proc forgets once the process is reaped.
type Proc struct {
	*childproc.Proc

	mu   sync.Mutex
	peak int64 // VmHWM in kB, last read while the process ran
}

// StartProc starts bin with args and exactly env (nothing inherited), its
// stdout and stderr going to dir/<name>.log.
func StartProc(bin, dir, name string, env, args []string) (*Proc, error) {
	p, err := childproc.Start(bin, dir, name, env, args)
	if err != nil {
		return nil, err
	}
	return &Proc{Proc: p}, nil
}

// Stop sends SIGTERM, as a deploy does, and waits up to timeout for a
// graceful exit; then it kills the process and says so. A non-zero exit
// status after SIGTERM is an error too: the benchmark wants clean stops.
func (p *Proc) Stop(timeout time.Duration) error {
	if p.Exited() {
		return nil // gone already (the soak SIGKILLs workers): nothing to stop
	}
	if err := p.Terminate(timeout); err != nil {
		return err
	}
	if code := p.ExitCode(); code != 0 {
		return fmt.Errorf("%s exited with status %d after SIGTERM; see %s", p.Name, code, p.LogPath())
	}
	return nil
}

// Usage reads the process's CPU time so far and its peak resident set size
// (VmHWM) from /proc. After the process has exited it returns the last peak
// it saw and no CPU time.
func (p *Proc) Usage() (cpu time.Duration, peakKB int64) {
	cpu, _ = procCPU(p.PID())
	if kb, err := procPeakRSS(p.PID()); err == nil && !p.Exited() {
		p.mu.Lock()
		p.peak = max(p.peak, kb)
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return cpu, p.peak
}
