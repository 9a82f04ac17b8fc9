// Package fault holds the fault points: named places between two steps of
// the flow (consumer.FaultAfterMarkPaid, payment.FaultBeforeGatewayCall)
// where a test, a scenario or the lab page makes the step fail or the
// process crash on demand, to reproduce a partial failure. A story part
// takes a *Set (WithFaults) and calls Hit between its steps; the nil *Set,
// production's, fires nothing. Only a process started in workshop mode
// accepts --faults (orderpaid-lab).
package fault

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrInjected is the error an armed fault point returns.
var ErrInjected = errors.New("injected fault")

// Mode is what an armed fault point does.
type Mode string

// Modes.
const (
	// Fail returns ErrInjected (the handler fails, the broker redelivers).
	Fail Mode = "error"
	// Crash ends the process at once, as a SIGKILL would.
	Crash Mode = "crash"
	// Pause holds the step for PauseFor, then lets it go on: a GC pause, a
	// stalled disk or a slow batch, in which something else happens (a
	// consumer joins the group, the process is killed) while the step is
	// held.
	Pause Mode = "pause"
)

// PauseFor is how long a point armed in Pause mode holds its step: long
// enough for a scenario to start another process and act while it waits,
// shorter than a Kafka rebalance's timeout (30s), so a pause alone drops no
// member from its group.
const PauseFor = 20 * time.Second

// Set holds the armed fault points. A nil Set is inert: every hit is a
// no-op.
type Set struct {
	mu    sync.Mutex
	armed map[string]arming
	crash func()
	pause time.Duration // PauseFor; shorter in this package's tests
}

type arming struct {
	mode  Mode
	times int // remaining hits; < 0 means every hit
}

// Hit fires the point if it is armed: it returns ErrInjected, crashes the
// process for a point armed in Crash mode, or holds the caller for PauseFor
// and returns nil for one armed in Pause mode (the step then goes on, as
// after a GC pause). Otherwise, and always on a nil Set (production), it
// returns nil.
func (s *Set) Hit(point string) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	a, ok := s.armed[point]
	if ok && a.times > 0 {
		a.times--
		if a.times == 0 {
			delete(s.armed, point)
		} else {
			s.armed[point] = a
		}
	}
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if a.mode == Pause {
		time.Sleep(s.pause)
		return nil
	}
	if a.mode == Crash && s.crash != nil {
		s.crash()
	}
	return fmt.Errorf("%w at %s", ErrInjected, point)
}
