package levers_test

import (
	"errors"
	"testing"

	"github.com/orderpaid/orderpaid/internal/platform/levers"
)

func TestParseWithout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		list    string
		wantOff string
		wantErr bool
	}{
		{"", "", false},
		{"state-check", "state-check", false},
		{"provider-key, inbox", "inbox,provider-key", false},
		{"inbox,inbox", "inbox", false},
		{"everything", "", true},
		{"StateCheck", "", true}, // the Go constant's name, not the guard's
	}
	for _, tt := range tests {
		l, err := levers.ParseWithout(tt.list)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseWithout(%q) error = %v, want error %v", tt.list, err, tt.wantErr)
			continue
		}
		if err == nil && l.GuardsOff() != tt.wantOff {
			t.Errorf("ParseWithout(%q).GuardsOff() = %q, want %q", tt.list, l.GuardsOff(), tt.wantOff)
		}
	}
}

// The names --without accepts are the workshop's and the docs': they stay
// what they were, and each one switches its own guard off.
func TestGuardNames(t *testing.T) {
	t.Parallel()
	want := []string{"charge-claim", "charge-record", "idempotency-key", "inbox", "ledger-key", "outbox", "provider-key", "state-check", "stock-reservation", "webhook-inbox"}
	got := levers.GuardNames()
	if len(got) != len(want) {
		t.Fatalf("GuardNames() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("GuardNames() = %v, want %v", got, want)
		}
		l, err := levers.ParseWithout(want[i])
		if err != nil || !l.Off(levers.Guard(want[i])) || l.GuardsOff() != want[i] {
			t.Errorf("ParseWithout(%q): %v, GuardsOff %q: want only %s off", want[i], err, l.GuardsOff(), want[i])
		}
	}
}

// The zero value is production: every guard on and no fault armed.
func TestNoneIsProduction(t *testing.T) {
	t.Parallel()
	for _, l := range []levers.Levers{{}, levers.None()} {
		for _, name := range levers.GuardNames() {
			if l.Off(levers.Guard(name)) {
				t.Errorf("%s is off in the zero Levers", name)
			}
		}
		if err := l.Hit("order_paid.after_mark_paid"); err != nil {
			t.Errorf("Hit on the zero Levers: %v, want nil", err)
		}
	}
}

// Without returns a copy: the levers it was called on keep their guards,
// and copies share the fault set, so a point armed after the copy fires in
// both.
func TestWithoutCopies(t *testing.T) {
	t.Parallel()
	faults := levers.NewFaultSet(nil)
	base := levers.None().Without(levers.Inbox).WithFaults(faults)
	a := base.Without(levers.StateCheck)
	b := base.Without(levers.Outbox)
	if base.GuardsOff() != "inbox" || a.GuardsOff() != "inbox,state-check" || b.GuardsOff() != "inbox,outbox" {
		t.Errorf("GuardsOff: base %q, a %q, b %q; want inbox, inbox,state-check, inbox,outbox", base.GuardsOff(), a.GuardsOff(), b.GuardsOff())
	}
	faults.Arm("p", levers.Fail, 2)
	if !errors.Is(a.Hit("p"), levers.ErrInjected) || !errors.Is(b.Hit("p"), levers.ErrInjected) || base.Hit("p") != nil {
		t.Error("copies do not share the fault set armed twice")
	}
}
