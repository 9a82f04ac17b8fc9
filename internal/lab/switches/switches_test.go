package switches_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		list      string
		wantFixed string
		wantErr   bool
	}{
		{"", "", false},
		{"state-check", "state-check", false},
		{"provider-key, inbox", "inbox,provider-key", false},
		{"inbox,inbox", "inbox", false},
		{" , inbox ,", "inbox", false},
		{"everything", "", true},
		{"StateCheck", "", true},       // a Go constant's name, not the guard's
		{"GuardStateCheck", "", true},  // nor effect's
		{"inbox,everything", "", true}, // one unknown name refuses the list
	}
	for _, tt := range tests {
		s, err := switches.Parse(tt.list)
		if (err != nil) != tt.wantErr {
			t.Errorf("Parse(%q) error = %v, want error %v", tt.list, err, tt.wantErr)
			continue
		}
		if err != nil {
			// The refusal lists the names it accepts.
			for _, name := range switches.Names() {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("Parse(%q) = %v: the error does not list %s", tt.list, err, name)
				}
			}
			continue
		}
		if s.Fixed() != tt.wantFixed {
			t.Errorf("Parse(%q).Fixed() = %q, want %q", tt.list, s.Fixed(), tt.wantFixed)
		}
		if s.CanSwitch() {
			t.Errorf("Parse(%q) is live: a set parsed from --without cannot be switched", tt.list)
		}
		for _, name := range switches.Names() {
			if want := slices.Contains(strings.Split(tt.wantFixed, ","), name); s.Off(name) != want {
				t.Errorf("Parse(%q).Off(%s) = %v, want %v", tt.list, name, s.Off(name), want)
			}
		}
	}
}

// The names --without accepts are the workshop's and the docs': they stay
// what they were, they are effect's, and each one switches its own guard
// off.
func TestNames(t *testing.T) {
	t.Parallel()
	want := []string{"ask-first", "charge-claim", "charge-record", "idempotency-key", "inbox", "ledger-key", "notification-claim", "outbox", "provider-key", "state-check", "stock-reservation", "webhook-inbox"}
	got := switches.Names()
	if !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	consts := []string{effect.GuardAskFirst, effect.GuardChargeClaim, effect.GuardChargeRecord, effect.GuardIdempotencyKey, effect.GuardInbox, effect.GuardLedgerKey,
		effect.GuardNotificationClaim, effect.GuardOutbox, effect.GuardProviderKey, effect.GuardStateCheck, effect.GuardStockReservation, effect.GuardWebhookInbox}
	if !slices.Equal(consts, want) {
		t.Errorf("effect's guard constants = %v, want %v", consts, want)
	}
	for _, name := range want {
		s, err := switches.Parse(name)
		if err != nil || s.Fixed() != name || !slices.Equal(s.OffNow(), []string{name}) {
			t.Errorf("Parse(%q): %v, Fixed %q, OffNow %v: want only %s off", name, err, s.Fixed(), s.OffNow(), name)
		}
	}
}

func TestWithout(t *testing.T) {
	t.Parallel()
	if s := switches.Without(effect.GuardOutbox, effect.GuardInbox, effect.GuardOutbox); s.Fixed() != "inbox,outbox" || s.CanSwitch() {
		t.Errorf("Without(outbox, inbox, outbox): Fixed %q, live %v; want inbox,outbox, not live", s.Fixed(), s.CanSwitch())
	}
	if s := switches.Without(); s.Fixed() != "" || len(s.OffNow()) != 0 {
		t.Errorf("Without(): Fixed %q, OffNow %v; want every guard on", s.Fixed(), s.OffNow())
	}
	defer func() {
		if recover() == nil {
			t.Error("Without of an unknown guard did not panic")
		}
	}()
	switches.Without("everything")
}

// The nil set is production's: every guard on, none can be switched.
func TestNilSetIsProduction(t *testing.T) {
	t.Parallel()
	var none *switches.Set
	for _, name := range switches.Names() {
		if none.Off(name) {
			t.Errorf("%s is off in the nil set", name)
		}
	}
	if none.AnyOff(switches.Names()...) || none.CanSwitch() || none.Fixed() != "" || len(none.OffNow()) != 0 {
		t.Errorf("nil set: AnyOff %v, CanSwitch %v, Fixed %q, OffNow %v; want nothing off, not live",
			none.AnyOff(switches.Names()...), none.CanSwitch(), none.Fixed(), none.OffNow())
	}
	if err := none.Switch(effect.GuardLedgerKey, true); err == nil {
		t.Error("Switch on the nil set: no error")
	}
	if none.Off(effect.GuardLedgerKey) {
		t.Error("a refused Switch switched ledger-key off")
	}
}

func TestSwitchRefuses(t *testing.T) {
	t.Parallel()
	live := (*switches.Set)(nil).Live()
	if err := live.Switch("everything", true); err == nil || !strings.Contains(err.Error(), effect.GuardLedgerKey) {
		t.Errorf("Switch of an unknown guard = %v, want an error listing the guards", err)
	}
	if len(live.OffNow()) != 0 {
		t.Errorf("a refused Switch switched %v off", live.OffNow())
	}
	fixed := switches.Without(effect.GuardInbox) // --without: not live
	if err := fixed.Switch(effect.GuardLedgerKey, true); err == nil || !strings.Contains(err.Error(), "workshop mode") {
		t.Errorf("Switch on a set that is not live = %v, want an error saying how to get one", err)
	}
	if fixed.Off(effect.GuardLedgerKey) || fixed.Fixed() != "inbox" {
		t.Errorf("a refused Switch changed the set: ledger-key off %v, Fixed %q", fixed.Off(effect.GuardLedgerKey), fixed.Fixed())
	}
}

// A guard switched off in a live set is off at the next look, and back on
// when switched on; what --without switched off stays off, and Fixed still
// lists only it. Live copies: the set it was made from keeps its guards and
// still cannot switch.
func TestLiveSwitches(t *testing.T) {
	t.Parallel()
	fixed := switches.Without(effect.GuardInbox)
	live := fixed.Live()
	if !live.CanSwitch() || live.Fixed() != "inbox" || !live.Off(effect.GuardInbox) {
		t.Fatalf("Live(): CanSwitch %v, Fixed %q, inbox off %v; want live, with inbox kept off", live.CanSwitch(), live.Fixed(), live.Off(effect.GuardInbox))
	}
	if live.Off(effect.GuardLedgerKey) {
		t.Fatal("ledger-key off before any switch")
	}
	if err := live.Switch(effect.GuardLedgerKey, true); err != nil {
		t.Fatal(err)
	}
	if err := live.Switch(effect.GuardLedgerKey, true); err != nil { // twice: still once
		t.Fatal(err)
	}
	if !live.Off(effect.GuardLedgerKey) || live.Off(effect.GuardStateCheck) {
		t.Errorf("after switching ledger-key off: ledger-key off %v, state-check off %v; want only ledger-key", live.Off(effect.GuardLedgerKey), live.Off(effect.GuardStateCheck))
	}
	if got := live.OffNow(); !slices.Equal(got, []string{"inbox", "ledger-key"}) {
		t.Errorf("OffNow() = %v, want [inbox ledger-key]", got)
	}
	if live.Fixed() != "inbox" {
		t.Errorf("Fixed() = %q after a switch, want only the --without guard", live.Fixed())
	}
	if !live.AnyOff(effect.GuardStateCheck, effect.GuardLedgerKey) || live.AnyOff(effect.GuardStateCheck, effect.GuardOutbox) {
		t.Error("AnyOff does not answer for the switched guard alone")
	}
	if fixed.Off(effect.GuardLedgerKey) || fixed.CanSwitch() {
		t.Error("switching the live copy changed the set it was made from")
	}
	if err := live.Switch(effect.GuardLedgerKey, false); err != nil {
		t.Fatal(err)
	}
	if live.Off(effect.GuardLedgerKey) {
		t.Error("ledger-key still off after switching it back on")
	}
	// A guard off from the start stays off.
	if err := live.Switch(effect.GuardInbox, false); err != nil {
		t.Fatal(err)
	}
	if !live.Off(effect.GuardInbox) || !slices.Equal(live.OffNow(), []string{"inbox"}) {
		t.Errorf("inbox off %v, OffNow %v after switching the --without guard on: want it kept off", live.Off(effect.GuardInbox), live.OffNow())
	}
}

// Switching while the guards are read from many goroutines is safe (run
// with -race) and ends in the last state set; so is calling a field a live
// set wired while it is switched.
func TestSwitchesConcurrent(t *testing.T) {
	t.Parallel()
	live := (*switches.Set)(nil).Live()
	keys := consumerGuardsOf(live).ProviderKey
	names := switches.Names()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				switch i % 4 {
				case 0, 1:
					_ = live.Switch(names[(i+j)%len(names)], j%3 == 0)
				case 2:
					_ = live.Off(effect.GuardLedgerKey)
					_ = live.OffNow()
				default:
					_ = keys("m1")
				}
			}
		})
	}
	wg.Wait()
	for _, name := range names {
		if err := live.Switch(name, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := live.OffNow(); len(got) != 0 {
		t.Errorf("OffNow() = %v after switching every guard on", got)
	}
	if got := keys("m1"); got != "m1" {
		t.Errorf("ProviderKey(m1) = %q with every guard on again, want m1", got)
	}
}
