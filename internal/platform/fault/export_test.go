package fault

import "time"

// SetPause makes s's Pause points hold for d instead of PauseFor, so a test
// of the mode takes milliseconds.
func SetPause(s *Set, d time.Duration) { s.pause = d }
