package fault

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Arming the points: what a test, a scenario or --faults does before the run.
// The flow only hits them (fault.go).

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
// the caller gathers the list (app.FaultPoints in internal/app/faults.go).
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
