package levers_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/orderpaid/orderpaid/internal/platform/levers"
)

// A guard switched off in the shared set is off in every copy of the levers
// carrying it, made before or after the switch, and back on when switched on.
func TestSwitchesAreSharedByCopies(t *testing.T) {
	t.Parallel()
	sw := levers.NewSwitches()
	base := levers.None().WithSwitches(sw)
	api, worker := base, base.Without(levers.Inbox) // copies, as each part gets its own
	if api.Off(levers.LedgerKey) || worker.Off(levers.LedgerKey) {
		t.Fatal("ledger-key off before any switch")
	}
	if err := sw.Set("ledger-key", true); err != nil {
		t.Fatal(err)
	}
	later := base.WithFaults(nil)
	for name, l := range map[string]levers.Levers{"api": api, "worker": worker, "later copy": later} {
		if !l.Off(levers.LedgerKey) {
			t.Errorf("%s: ledger-key on after the switch set switched it off", name)
		}
		if l.Off(levers.StateCheck) {
			t.Errorf("%s: state-check off, but only ledger-key was switched", name)
		}
	}
	if got := sw.List(); !slices.Equal(got, []string{"ledger-key"}) {
		t.Errorf("List() = %v, want [ledger-key]", got)
	}
	if err := sw.Set("ledger-key", false); err != nil {
		t.Fatal(err)
	}
	if api.Off(levers.LedgerKey) || worker.Off(levers.LedgerKey) {
		t.Error("ledger-key still off after switching it back on")
	}
	// What --without switched off stays off, and GuardsOff still lists only it.
	if !worker.Off(levers.Inbox) || worker.GuardsOff() != "inbox" {
		t.Errorf("worker: inbox off %v, GuardsOff %q: want the --without guard kept", worker.Off(levers.Inbox), worker.GuardsOff())
	}
}

func TestSwitchesRefuse(t *testing.T) {
	t.Parallel()
	if err := levers.NewSwitches().Set("everything", true); err == nil {
		t.Error("Set of an unknown guard: no error")
	}
	var none *levers.Switches
	if err := none.Set("ledger-key", true); err == nil {
		t.Error("Set on a nil switch set: no error")
	}
	if none.Off(levers.LedgerKey) || len(none.List()) != 0 {
		t.Error("a nil switch set has a guard off")
	}
	if levers.None().Switches() != nil {
		t.Error("production levers carry a switch set")
	}
}

// Switching while the guards are read from many goroutines is safe (run
// with -race) and ends in the last state set.
func TestSwitchesConcurrent(t *testing.T) {
	t.Parallel()
	sw := levers.NewSwitches()
	l := levers.None().WithSwitches(sw)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				if i%2 == 0 {
					_ = sw.Set(levers.GuardNames()[j%len(levers.GuardNames())], j%3 == 0)
				} else {
					_ = l.Off(levers.LedgerKey)
				}
			}
		}()
	}
	wg.Wait()
	for _, name := range levers.GuardNames() {
		if err := sw.Set(name, false); err != nil {
			t.Fatal(err)
		}
	}
	if len(sw.List()) != 0 {
		t.Errorf("List() = %v after switching every guard on", sw.List())
	}
}
