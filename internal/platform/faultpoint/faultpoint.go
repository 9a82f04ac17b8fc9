// Package faultpoint injects failures at named places in the code, so tests
// and scenarios can reproduce a partial failure (a crash between two effects,
// a timeout after a commit) on demand. A nil or empty Set is inert: in normal
// operation every Hit is a no-op.
package faultpoint

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Named fault points.
const (
	// AfterMarkPaid fires in the order_paid consumer between step 1 (order
	// marked paid, confirmation in the outbox) and step 2 (commission).
	AfterMarkPaid = "order_paid.after_mark_paid"
	// BeforeAck fires after every effect of order_paid committed, before the
	// message is acknowledged: a timeout that left the work done.
	BeforeAck = "order_paid.before_ack"
	// AfterProviderCall fires in the order_confirmed consumer after the
	// notification provider answered, before the inbox row is written.
	AfterProviderCall = "order_confirmed.after_provider_call"
)

// ErrInjected is the error an armed fault point returns.
var ErrInjected = errors.New("injected fault")

// Mode is what an armed point does.
type Mode string

// Modes.
const (
	// Fail returns ErrInjected (the handler fails, the broker redelivers).
	Fail Mode = "error"
	// Crash ends the process at once, as a SIGKILL would.
	Crash Mode = "crash"
)

// Set holds the armed fault points.
type Set struct {
	mu    sync.Mutex
	armed map[string]arming
	crash func()
}

type arming struct {
	mode  Mode
	times int // remaining hits; < 0 means every hit
}

// New returns an empty Set. crash is called by points armed in Crash mode.
func New(crash func()) *Set {
	return &Set{armed: map[string]arming{}, crash: crash}
}

// Parse arms points from a spec such as
// "order_paid.after_mark_paid=error:1,order_confirmed.after_provider_call=crash".
// The count after the colon is how many hits fire (default: every hit).
//
// known lists every point the code hits. A name not in it is refused: arming
// a misspelt point would arm nothing, and the scenario or test that relies
// on the fault would pass without it ever firing. The consumers' points are
// declared above, others beside the code that hits them (payment's in
// internal/payment), in packages this one must not import, so the caller
// gathers the list (faultPoints in cmd/orderpaid).
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
		if Mode(mode) != Fail && Mode(mode) != Crash {
			return nil, fmt.Errorf("fault %q: mode must be error or crash", item)
		}
		s.Arm(name, Mode(mode), times)
	}
	return s, nil
}

// Arm makes the next times hits of name fire (times < 0: every hit).
func (s *Set) Arm(name string, mode Mode, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed[name] = arming{mode: mode, times: times}
}

// Hit fires the point if it is armed: it returns ErrInjected, or crashes the
// process, and otherwise returns nil.
func (s *Set) Hit(name string) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	a, ok := s.armed[name]
	if ok && a.times > 0 {
		a.times--
		if a.times == 0 {
			delete(s.armed, name)
		} else {
			s.armed[name] = a
		}
	}
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if a.mode == Crash && s.crash != nil {
		s.crash()
	}
	return fmt.Errorf("%w at %s", ErrInjected, name)
}
