package levers

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Guard names one protection of the flow, as --without spells it.
type Guard string

// The guards, and what switching each off (--without NAME) does instead.
const (
	// StateCheck: the conditional UPDATE ... WHERE status = 'pending'
	// (off: an unconditional UPDATE, order.MarkPaidUnguarded).
	StateCheck Guard = "state-check"
	// LedgerKey: the ledger key from the business intent (off: from the
	// delivery, ledger.ReleaseCommissionUnguarded).
	LedgerKey Guard = "ledger-key"
	// Outbox: the confirmation in the transition's transaction (off:
	// published after the commit).
	Outbox Guard = "outbox"
	// Inbox: the order_confirmed inbox (off: no inbox check).
	Inbox Guard = "inbox"
	// ProviderKey: the message id as the provider's Idempotency-Key (off: a
	// fresh key per call).
	ProviderKey Guard = "provider-key"
	// WebhookInbox: the webhook inbox by provider event id (off: every
	// delivery enqueues order_paid).
	WebhookInbox Guard = "webhook-inbox"
	// IdempotencyKey: the Idempotency-Key at POST /orders/{id}/payments
	// (off: every retry charges).
	IdempotencyKey Guard = "idempotency-key"
	// ChargeClaim: one charge per order, whatever the key (off: every new
	// key charges).
	ChargeClaim Guard = "charge-claim"
	// ChargeRecord: the charge a signed payment.succeeded names recorded on
	// the order's payment intent (off: the event's charge id is dropped, and
	// the service knows a charge only from the api's answer).
	ChargeRecord Guard = "charge-record"
	// StockReservation: one reservation row per (order, SKU) and a guarded
	// decrement (off: the naive counter, a decrement per delivery).
	StockReservation Guard = "stock-reservation"
)

// guards lists every Guard, sorted by name.
var guards = []Guard{ChargeClaim, ChargeRecord, IdempotencyKey, Inbox, LedgerKey, Outbox, ProviderKey, StateCheck, StockReservation, WebhookInbox}

// GuardNames lists the names --without accepts, sorted.
func GuardNames() []string {
	names := make([]string, len(guards))
	for i, g := range guards {
		names[i] = string(g)
	}
	return names
}

// Levers says which guards are switched off and which fault points are
// armed. The zero value, None(), is production: every guard on, no fault
// armed. Copies share the fault set and the switch set.
type Levers struct {
	off      []Guard   // switched off, sorted, no repeats; nil: every guard on
	faults   *FaultSet // nil: no fault point armed
	switches *Switches // nil: no guard can be switched at run time
}

// None returns the production levers: every guard on, no fault armed.
func None() Levers { return Levers{} }

// ParseWithout returns None() with the comma-separated guards of list
// switched off, as --without gives them ("state-check,inbox"). A name that
// is not a guard is refused, with the names it accepts.
func ParseWithout(list string) (Levers, error) {
	var l Levers
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(guards, Guard(name)) {
			return Levers{}, fmt.Errorf("unknown guard %q: want one of %s", name, strings.Join(GuardNames(), ", "))
		}
		l = l.Without(Guard(name))
	}
	return l, nil
}

// Without returns a copy of l with the guards gs switched off too.
func (l Levers) Without(gs ...Guard) Levers {
	off := slices.Clone(l.off)
	for _, g := range gs {
		if !slices.Contains(off, g) {
			off = append(off, g)
		}
	}
	slices.Sort(off)
	l.off = off
	return l
}

// Off reports whether guard g is switched off: the guarded call is to make
// the mistake g prevents instead. A guard is off when it was switched off
// from the start (--without) or is switched off now in l's switch set.
func (l Levers) Off(g Guard) bool { return slices.Contains(l.off, g) || l.switches.Off(g) }

// GuardsOff lists the guards switched off from the start (--without),
// comma-separated and sorted; "" when every guard started on. The guards of
// the switch set are listed by Switches().List.
func (l Levers) GuardsOff() string {
	names := make([]string, len(l.off))
	for i, g := range l.off {
		names[i] = string(g)
	}
	return strings.Join(names, ",")
}

// WithFaults returns a copy of l whose fault points are those armed in f
// (nil: none).
func (l Levers) WithFaults(f *FaultSet) Levers {
	l.faults = f
	return l
}

// Hit fires the fault point if it is armed: it returns ErrInjected, or
// crashes the process for a point armed in Crash mode. Otherwise, and
// always in production (no fault set), it returns nil.
func (l Levers) Hit(point string) error { return l.faults.fire(point) }

// WithSwitches returns a copy of l that also obeys the switch set s (nil:
// none): every copy made from it, in every part of the process, sees a guard
// switched off in s at its next call.
func (l Levers) WithSwitches(s *Switches) Levers {
	l.switches = s
	return l
}

// Switches returns l's switch set, nil when it has none.
func (l Levers) Switches() *Switches { return l.switches }

// Faults returns the fault set l carries (WithFaults), nil when none: the
// lab page arms its points at run time through it.
func (l Levers) Faults() *FaultSet { return l.faults }

// Switches is a set of guards switched off at run time, for the lab page of
// a process started in workshop mode: one set is shared by every part of the
// process (the api's and the worker's copies of the levers), and it is safe
// for concurrent use. It only adds to --without: a guard switched off from
// the start stays off. A nil *Switches has every guard on and refuses to
// switch any.
//
// A guarded call reads its guard once per step, so a switch takes effect at
// the next step of the next message; a message in flight at that moment may
// see the guard on in one step and off in the next.
type Switches struct {
	mu  sync.RWMutex
	off []Guard // sorted, no repeats
}

// NewSwitches returns a switch set with every guard on.
func NewSwitches() *Switches { return &Switches{} }

// Off reports whether guard g is switched off in s.
func (s *Switches) Off(g Guard) bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Contains(s.off, g)
}

// Set switches the guard named name off (off true) or back on. A name that
// is not a guard is refused, with the names it accepts, and so is any switch
// on a nil set.
func (s *Switches) Set(name string, off bool) error {
	g := Guard(name)
	if !slices.Contains(guards, g) {
		return fmt.Errorf("unknown guard %q: want one of %s", name, strings.Join(GuardNames(), ", "))
	}
	if s == nil {
		return fmt.Errorf("guard %s: this process has no run-time switches (start it in workshop mode)", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := slices.BinarySearch(s.off, g)
	switch {
	case off && !found:
		s.off = slices.Insert(s.off, i, g)
	case !off && found:
		s.off = slices.Delete(s.off, i, i+1)
	}
	return nil
}

// List returns the names of the guards switched off in s, sorted; empty
// when every guard is on.
func (s *Switches) List() []string {
	if s == nil {
		return []string{}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, len(s.off))
	for i, g := range s.off {
		names[i] = string(g)
	}
	return names
}
