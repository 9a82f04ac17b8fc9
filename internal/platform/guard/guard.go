// Package guard names the protections of the flow and lets them be switched
// off, one at a time, for the scenarios and the workshop. Production runs with
// All(). Switching a guard off does not remove code: it swaps the guard for
// the realistic mistake it prevents, so the damage can be watched.
package guard

import (
	"fmt"
	"sort"
	"strings"
)

// Set says which guards are on.
type Set struct {
	StateCheck     bool // conditional UPDATE ... WHERE status = 'pending' (off: unconditional UPDATE)
	LedgerKey      bool // ledger key from the business intent (off: from the delivery)
	Outbox         bool // confirmation in the transition's transaction (off: publish after commit)
	Inbox          bool // order_confirmed inbox (off: no inbox check)
	ProviderKey    bool // message id as the provider's Idempotency-Key (off: a fresh key per call)
	WebhookInbox   bool // webhook inbox by provider event id (off: every delivery enqueues)
	IdempotencyKey bool // Idempotency-Key at POST /orders/{id}/payments (off: every retry charges)
	ChargeClaim    bool // one charge per order, whatever the key (off: every new key charges)
}

// All is every guard on: the correct configuration.
func All() Set {
	return Set{StateCheck: true, LedgerKey: true, Outbox: true, Inbox: true, ProviderKey: true, WebhookInbox: true, IdempotencyKey: true, ChargeClaim: true}
}

// switches maps each name accepted by --without to its field.
func (s *Set) switches() map[string]*bool {
	return map[string]*bool{
		"state-check":     &s.StateCheck,
		"ledger-key":      &s.LedgerKey,
		"outbox":          &s.Outbox,
		"inbox":           &s.Inbox,
		"provider-key":    &s.ProviderKey,
		"webhook-inbox":   &s.WebhookInbox,
		"idempotency-key": &s.IdempotencyKey,
		"charge-claim":    &s.ChargeClaim,
	}
}

// Names lists the names accepted by Without, sorted.
func Names() []string {
	var s Set
	names := make([]string, 0, 8)
	for name := range s.switches() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Without returns All() with the comma-separated guards switched off.
func Without(list string) (Set, error) {
	s := All()
	sw := s.switches()
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		field, ok := sw[name]
		if !ok {
			return Set{}, fmt.Errorf("unknown guard %q: want one of %s", name, strings.Join(Names(), ", "))
		}
		*field = false
	}
	return s, nil
}

// Off lists the guards that are off, by name, sorted ("" when all are on).
func (s Set) Off() string {
	var off []string
	for name, on := range s.switches() {
		if !*on {
			off = append(off, name)
		}
	}
	sort.Strings(off)
	return strings.Join(off, ",")
}
