// Package fault holds the fault points: named places between two steps of
// the flow (consumer.FaultAfterMarkPaid, payment.FaultBeforeGatewayCall)
// where a test, a scenario or the lab page makes the step fail or the
// process crash on demand, to reproduce a partial failure. A story part
// takes a *Set (WithFaults) and calls Hit between its steps; the nil *Set,
// production's, fires nothing. Only a process started in workshop mode
// accepts --faults (cmd/orderpaid).
package fault

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// New returns an empty Set. crash is called by points armed in
// Crash mode.
func New(crash func()) *Set {
	return &Set{armed: map[string]arming{}, crash: crash, pause: PauseFor}
}

// Parse arms points from a spec such as
// "order_paid.after_mark_paid=error:1,order_confirmed.after_provider_call=crash",
// as --faults gives it. The mode is error, crash or pause (Fail, Crash,
// Pause); the count after the colon is how many hits fire (default: every
// hit).
//
// known lists every point the code hits. A name not in it is refused: arming
// a misspelt point would arm nothing, and the scenario or test that relies
// on the fault would pass without it ever firing. Each point is declared
// beside the code that hits it, in packages this one must not import, so
// the caller gathers the list (faultPoints in cmd/orderpaid).
func Parse(spec string, known []string, crash func()) (*Set, error) {
	s := New(crash)
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, rest, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("fault %q: want name=mode[:count]", item)
		}
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("fault %q: unknown fault point %q: want one of %s", item, name, strings.Join(slices.Sorted(slices.Values(known)), ", "))
		}
		mode, count, _ := strings.Cut(rest, ":")
		times := -1
		if count != "" {
			n, err := strconv.Atoi(count)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("fault %q: count must be a positive integer", item)
			}
			times = n
		}
		if m := Mode(mode); m != Fail && m != Crash && m != Pause {
			return nil, fmt.Errorf("fault %q: mode must be error, crash or pause", item)
		}
		s.Arm(name, Mode(mode), times)
	}
	return s, nil
}

// Arm makes the next times hits of point fire (times < 0: every hit).
func (s *Set) Arm(point string, mode Mode, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed[point] = arming{mode: mode, times: times}
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
