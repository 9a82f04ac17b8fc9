// Package switches is the lab's switches: the guards switched off, from the
// start (--without) or at run time (the lab page), and the wiring that puts
// the mistake each guard prevents in that guard's place.
//
// The story does not know it exists. Each story part calls its guarded
// steps through a Guards value of its own (consumer.Guards, payment.Guards,
// webhook.Guards), whose fields default to the guards; this package, used
// only where a process in workshop mode is wired (cmd/orderpaid-lab), sets a
// field to the mistake named beside it in the table of guards
// (effect.Protections). A guard switched off at run time takes effect at
// the next call of its step.
package switches

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/orderpaid/orderpaid/internal/effect"
)

// Names lists the guards that can be switched off, as --without spells
// them, sorted.
func Names() []string { return effect.GuardNames() }

// Set is the guards switched off in one process: those off from the start
// (--without), and, when the set is live (the lab page's), those switched
// off since. It is safe for concurrent use. The nil *Set is production's:
// every guard on, none can be switched.
type Set struct {
	fixed []string // off from the start, sorted
	live  bool     // accepts Switch
	mu    sync.RWMutex
	off   []string // switched off since, sorted
}

// Parse returns the set with the comma-separated guards of list off from
// the start ("state-check,inbox"), as --without gives them. A name that is
// not a guard is refused, with the names it accepts.
func Parse(list string) (*Set, error) {
	s := &Set{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if err := known(name); err != nil {
			return nil, err
		}
		if !slices.Contains(s.fixed, name) {
			s.fixed = append(s.fixed, name)
		}
	}
	slices.Sort(s.fixed)
	return s, nil
}

// Without returns the set with the guards names off from the start; it
// panics on a name that is not a guard (for tests and the lab's own
// runners, whose names are constants).
func Without(names ...string) *Set {
	s, err := Parse(strings.Join(names, ","))
	if err != nil {
		panic(err)
	}
	return s
}

// Live returns a copy of s (nil: every guard on) that accepts Switch: the
// set of a process whose lab page switches guards at run time.
func (s *Set) Live() *Set {
	cp := &Set{live: true}
	if s != nil {
		cp.fixed = slices.Clone(s.fixed)
	}
	return cp
}

// CanSwitch reports whether guards can be switched in s at run time.
func (s *Set) CanSwitch() bool { return s != nil && s.live }

// Off reports whether guard name is off in s now.
func (s *Set) Off(name string) bool {
	if s == nil {
		return false
	}
	if slices.Contains(s.fixed, name) {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Contains(s.off, name)
}

// AnyOff reports whether any of names is off in s now.
func (s *Set) AnyOff(names ...string) bool {
	return slices.ContainsFunc(names, s.Off)
}

// Fixed lists the guards off from the start, comma-separated and sorted;
// "" when none.
func (s *Set) Fixed() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.fixed, ",")
}

// OffNow lists the guards off in s now, sorted.
func (s *Set) OffNow() []string {
	return slices.DeleteFunc(Names(), func(name string) bool { return !s.Off(name) })
}

// Switch switches guard name off (off true) or back on, at run time. A name
// that is not a guard is refused, and so is any switch in a set that is not
// live. A guard off from the start stays off.
func (s *Set) Switch(name string, off bool) error {
	if err := known(name); err != nil {
		return err
	}
	if !s.CanSwitch() {
		return fmt.Errorf("guard %s: this process has no run-time switches (start it in workshop mode)", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := slices.BinarySearch(s.off, name)
	switch {
	case off && !found:
		s.off = slices.Insert(s.off, i, name)
	case !off && found:
		s.off = slices.Delete(s.off, i, i+1)
	}
	return nil
}

func known(name string) error {
	if !slices.Contains(Names(), name) {
		return fmt.Errorf("unknown guard %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	return nil
}
