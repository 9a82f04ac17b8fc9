package levers

import (
	"fmt"
	"slices"
	"strings"
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
	// StockReservation: one reservation row per (order, SKU) and a guarded
	// decrement (off: the naive counter, a decrement per delivery).
	StockReservation Guard = "stock-reservation"
)

// guards lists every Guard, sorted by name.
var guards = []Guard{ChargeClaim, IdempotencyKey, Inbox, LedgerKey, Outbox, ProviderKey, StateCheck, StockReservation, WebhookInbox}

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
// armed. Copies share the fault set.
type Levers struct {
	off    []Guard   // switched off, sorted, no repeats; nil: every guard on
	faults *FaultSet // nil: no fault point armed
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
// the mistake g prevents instead.
func (l Levers) Off(g Guard) bool { return slices.Contains(l.off, g) }

// GuardsOff lists the guards switched off, comma-separated and sorted; ""
// when every guard is on.
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
