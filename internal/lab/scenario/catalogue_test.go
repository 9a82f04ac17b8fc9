package scenario

import (
	"slices"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/switches"
)

// The catalogue is what the issue asks for: every guard can be switched off
// in at least one scenario, whose damage is then checked.
func TestEveryGuardIsDemonstrated(t *testing.T) {
	t.Parallel()
	for _, g := range switches.Names() {
		if len(Demonstrating(g)) == 0 {
			t.Errorf("no scenario demonstrates --without %s", g)
		}
	}
}

func TestCatalogueIsWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, s := range Catalogue() {
		if seen[s.Name] {
			t.Errorf("two scenarios named %s", s.Name)
		}
		seen[s.Name] = true
		if s.Summary == "" || s.Repeated == "" || s.Run == nil || len(s.Protected.Checks) == 0 {
			t.Errorf("%s: summary, repeated, run and protected checks are all required", s.Name)
		}
		for _, g := range s.Guards() {
			if !slices.Contains(switches.Names(), g) {
				t.Errorf("%s: --without %s is not a guard (switches.Names: %v)", s.Name, g, switches.Names())
			}
			if s.Without[g].Damage == "" {
				t.Errorf("%s --without %s: say what the damage is", s.Name, g)
			}
		}
		if _, err := s.Expectation("no-such-guard"); err == nil {
			t.Errorf("%s: Expectation accepted an unknown guard", s.Name)
		}
	}
	if _, err := Find("no-such-scenario"); err == nil {
		t.Error("Find accepted an unknown scenario")
	}
}

func TestChecks(t *testing.T) {
	t.Parallel()
	c := Counts{Paid: 1, Commission: 2, ExecOrderPaid: 3}
	tests := []struct {
		name   string
		checks []Check
		failed int
	}{
		{"exact match", []Check{eq(Paid, 1), eq(Commission, 2)}, 0},
		{"exact mismatch", []Check{eq(Commission, 1)}, 1},
		{"at least, met", []Check{atLeast(ExecOrderPaid, 2)}, 0},
		{"at least, not met", []Check{atLeast(ExecOrderPaid, 4)}, 1},
		{"with replaces the base check", with([]Check{eq(Commission, 1)}, eq(Commission, 2)), 0},
		{"once expects one of everything", once(1), 5}, // all but paid: four are 0, commission is 2
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := (Expect{Checks: tt.checks}).failed(c); len(got) != tt.failed {
				t.Errorf("failed = %v, want %d failures", got, tt.failed)
			}
		})
	}
}
