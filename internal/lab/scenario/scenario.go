package scenario

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Scenario is one way a backend repeats work, reproduced on demand.
type Scenario struct {
	// Name is what `orderpaid-lab scenario run NAME` takes.
	Name string
	// Summary is the one line `scenario list` prints.
	Summary string
	// Repeated says, in a few words, what repeats: the "what repeated" column.
	Repeated string
	// Orders is how many orders the scenario pays (the expected counts are
	// totals over them). Zero means one.
	Orders int
	// Protected is the expected outcome with every guard on.
	Protected Expect
	// Without maps a guard name (switches.Names, from the table of guards) to the damage expected when
	// only that guard is off. A guard not listed here has no checked outcome
	// in this scenario, and `scenario run NAME --without GUARD` refuses it.
	Without map[string]Expect
	// Broker, when set, is the only broker the scenario runs on; on another
	// one its run is not applicable, and BrokerReason says why.
	Broker       string
	BrokerReason string
	// OutboxRelay, when set (config.RelayLogical), is the OUTBOX_RELAY every
	// process of the scenario runs with. Where the server's wal_level is not
	// logical the run is not applicable, naming the command that sets it
	// (an error under CI, where it must run).
	OutboxRelay string
	// NotOn names the brokers the scenario does not apply to, each with why:
	// there its run is not applicable.
	NotOn map[string]string
	// PerMessageOnly, when set, says why the scenario does not apply in
	// batch mode (CONSUMER_BATCH_SIZE above 1 in Config.Env): its run is
	// then not applicable, with that reason.
	PerMessageOnly string
	// WithEffects, when set, is what the scenario shows instead when the
	// batch reader's position commits with the effects (CONSUMER_POSITION=
	// with-effects in Config.Env), and why: a repeat that came from the
	// gap between the effects' commit and the position's is gone there.
	WithEffects *Difference
	// Settled says the flow has run its course: the runner waits for it, then
	// for a quiet period with no count changing. Nil: one order_confirmed
	// execution per order.
	Settled func(Counts) bool
	// Run sets up the processes, drives the flow and injects the fault.
	Run func(ctx context.Context, s *Stage) error
}

// Difference is a scenario's outcome in another mode of the worker.
type Difference struct {
	// Why the counts differ, in a sentence (docs/scenarios.md's table).
	Why string
	// Protected and Settled replace the scenario's own in that mode;
	// Without, when set, its expected damages.
	Protected Expect
	Without   map[string]Expect
	Settled   func(Counts) bool
}

// inMode returns s as it runs with the worker configured by env.
func (s *Scenario) inMode(env map[string]string) *Scenario {
	if s.WithEffects == nil || env["CONSUMER_POSITION"] != "with-effects" {
		return s
	}
	m := *s
	d := s.WithEffects
	m.Protected = d.Protected
	if d.Without != nil {
		m.Without = d.Without
	}
	if d.Settled != nil {
		m.Settled = d.Settled
	}
	return &m
}

// Expect is an expected outcome: checks on the counts, and the damage they
// amount to in words ("" when every effect happens once).
type Expect struct {
	Checks []Check
	Damage string
	// Note replaces "each effect once" in the verdict of a protected run
	// whose counts need a word of explanation.
	Note string
}

func (s *Scenario) orders() int { return max(s.Orders, 1) }

// Expectation returns what the scenario must show with guard off ("" for
// all guards on). It fails for a guard the scenario does not demonstrate.
func (s *Scenario) Expectation(guard string) (Expect, error) {
	if guard == "" {
		return s.Protected, nil
	}
	e, ok := s.Without[guard]
	if !ok {
		return Expect{}, fmt.Errorf("scenario %s has no expected outcome without %s; it demonstrates: %s",
			s.Name, guard, orNone(s.Guards()))
	}
	return e, nil
}

// Guards lists the guards whose absence this scenario demonstrates, sorted.
func (s *Scenario) Guards() []string {
	names := make([]string, 0, len(s.Without))
	for g := range s.Without {
		names = append(names, g)
	}
	sort.Strings(names)
	return names
}

func (s *Scenario) settled(c Counts) bool {
	if s.Settled != nil {
		return s.Settled(c)
	}
	return c.ExecOrderConfirmed >= int64(s.orders())
}

// Find returns the scenario called name.
func Find(name string) (*Scenario, error) {
	all := Catalogue()
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	return nil, fmt.Errorf("no scenario %q: `orderpaid-lab scenario list` shows them (%s)", name, strings.Join(names, ", "))
}

// Case is one run: a scenario, with at most one guard switched off.
type Case struct {
	Scenario *Scenario
	Without  string
}

// Matrix returns every scenario protected and then with each of its guards
// off: what CI runs.
func Matrix(scenarios []*Scenario) []Case {
	var cases []Case
	for _, s := range scenarios {
		cases = append(cases, Case{Scenario: s})
		for _, g := range s.Guards() {
			cases = append(cases, Case{Scenario: s, Without: g})
		}
	}
	return cases
}

// Demonstrating returns the scenarios that demonstrate guard.
func Demonstrating(guard string) []*Scenario {
	var out []*Scenario
	for _, s := range Catalogue() {
		if slices.Contains(s.Guards(), guard) {
			out = append(out, s)
		}
	}
	return out
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "no guard switch (it runs one fixed configuration)"
	}
	return strings.Join(names, ", ")
}
