package switches_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

func consumerGuardsOf(s *switches.Set) consumer.Guards {
	return switches.Consumers(consumer.NewConsumers(nil, nil), s, nil).Guards()
}

func paymentGuardsOf(s *switches.Set) payment.Guards {
	return switches.Payments(payment.NewService(nil, nil, payment.Config{}), s).Guards()
}

func webhookGuardsOf(s *switches.Set) webhook.Guards {
	return switches.Ingestor(webhook.NewIngestor(nil, nil), s).Guards()
}

// parts are the story parts the lab wires, each with its Guards as wired
// for a set, and its guards (Guarded).
var parts = []struct {
	name    string
	wired   func(*switches.Set) any
	guarded any
}{
	{"consumer", func(s *switches.Set) any { return consumerGuardsOf(s) }, consumer.Guarded()},
	{"payment", func(s *switches.Set) any { return paymentGuardsOf(s) }, payment.Guarded()},
	{"webhook", func(s *switches.Set) any { return webhookGuardsOf(s) }, webhook.Guarded()},
}

// funcName is the runtime name of the function f holds.
func funcName(f reflect.Value) string { return runtime.FuncForPC(f.Pointer()).Name() }

// funcFile is the file the code of the function f holds is in.
func funcFile(f reflect.Value) string {
	fn := runtime.FuncForPC(f.Pointer())
	file, _ := fn.FileLine(fn.Entry())
	return file
}

// isFunc reports whether f is fn (package.Name, as the table spells it):
// its runtime name ends with fn, or f is a closure fn made. Such a closure
// is named package.Name.funcN, or, when the compiler inlined fn into its
// caller (switches' wiring), Caller.funcM.Name.N: then its code is in fn's
// package's directory.
func isFunc(f changedField, fn string) bool {
	pkg, name, _ := strings.Cut(fn, ".")
	switch {
	case strings.HasSuffix(f.isNow, "/"+fn), strings.Contains(f.isNow, "/"+fn+".func"):
		return true
	case regexp.MustCompile(`\.` + regexp.QuoteMeta(name) + `\.[0-9]+$`).MatchString(f.isNow):
		return filepath.Base(filepath.Dir(f.file)) == pkg
	}
	return false
}

// lastName is the name after the last dot: "payUnderKey" for
// ".../payment.(*Service).payUnderKey".
func lastName(name string) string { return name[strings.LastIndex(name, ".")+1:] }

// rowsOf are the rows of effect.Protections whose guard --without name
// switches off.
func rowsOf(name string) []effect.Protection {
	var rows []effect.Protection
	for _, p := range effect.Protections {
		if p.Without == name {
			rows = append(rows, p)
		}
	}
	return rows
}

// changedField is a field of a part's Guards that a wiring changed.
type changedField struct {
	field      string // part.Field
	was, isNow string // runtime names
	file       string // the file isNow's code is in
	ptr        uintptr
}

// changed lists the fields of every part's Guards that wiring s changes.
func changed(t *testing.T, s *switches.Set) []changedField {
	t.Helper()
	var out []changedField
	for _, p := range parts {
		base, wired := reflect.ValueOf(p.wired(nil)), reflect.ValueOf(p.wired(s))
		for i := range base.NumField() {
			b, w := base.Field(i), wired.Field(i)
			if w.IsNil() {
				t.Fatalf("%s.%s is nil once wired", p.name, base.Type().Field(i).Name)
			}
			if b.Pointer() != w.Pointer() {
				out = append(out, changedField{p.name + "." + base.Type().Field(i).Name, funcName(b), funcName(w), funcFile(w), w.Pointer()})
			}
		}
	}
	return out
}

// Unwired (a nil set), each part calls its guards: production's steps.
func TestNilSetWiresNothing(t *testing.T) {
	t.Parallel()
	for _, p := range parts {
		got, want := reflect.ValueOf(p.wired(nil)), reflect.ValueOf(p.guarded)
		for i := range want.NumField() {
			if got.Field(i).Pointer() != want.Field(i).Pointer() {
				t.Errorf("%s.%s = %s with the nil set, want the guard %s", p.name, want.Type().Field(i).Name, funcName(got.Field(i)), funcName(want.Field(i)))
			}
		}
	}
	if c := consumer.NewConsumers(nil, nil); switches.Consumers(c, nil, nil) != c {
		t.Error("Consumers with the nil set did not return the consumers themselves")
	}
	if p := payment.NewService(nil, nil, payment.Config{}); switches.Payments(p, nil) != p {
		t.Error("Payments with the nil set did not return the service itself")
	}
	if in := webhook.NewIngestor(nil, nil); switches.Ingestor(in, nil) != in {
		t.Error("Ingestor with the nil set did not return the ingestor itself")
	}
	if got := changed(t, switches.Without()); len(got) != 0 {
		t.Errorf("a set with every guard on changed %v", got)
	}
}

// For every guard, a set with only that guard off changes exactly the
// fields its mistake names: each changed field now holds the Mistake of one
// of that guard's rows in effect.Protections and held the row's Guard
// before, every Mistake of those rows is in a field, and every other field
// of every part is left as it was. Every field of every part's Guards is
// some guard's.
func TestEachGuardOffWiresItsMistakeFromTheTable(t *testing.T) {
	t.Parallel()
	owner := map[string]string{} // field -> the guard whose mistake changed it
	for _, name := range switches.Names() {
		rows := rowsOf(name)
		if len(rows) == 0 {
			t.Errorf("--without %s: no row of effect.Protections", name)
			continue
		}
		got := changed(t, switches.Without(name))
		if len(got) == 0 {
			t.Errorf("--without %s changes no field of any part's Guards", name)
		}
		for _, f := range got {
			if prev, ok := owner[f.field]; ok {
				t.Errorf("%s is changed by --without %s and by --without %s", f.field, prev, name)
			}
			owner[f.field] = name
			i := slices.IndexFunc(rows, func(p effect.Protection) bool { return isFunc(f, p.Mistake) })
			if i < 0 {
				t.Errorf("--without %s: %s = %s, not a mistake of the guard's rows (%v)", name, f.field, f.isNow, mistakes(rows))
				continue
			}
			if !strings.EqualFold(lastName(f.was), lastName(rows[i].Guard)) {
				t.Errorf("--without %s: %s held %s before, not %s, the guard %s is the mistake of", name, f.field, f.was, rows[i].Guard, rows[i].Mistake)
			}
		}
		for _, m := range mistakes(rows) {
			if !slices.ContainsFunc(got, func(f changedField) bool { return isFunc(f, m) }) {
				t.Errorf("--without %s: no field holds its mistake %s (changed: %v)", name, m, got)
			}
		}
	}
	for _, p := range parts {
		typ := reflect.TypeOf(p.guarded)
		for i := range typ.NumField() {
			if field := p.name + "." + typ.Field(i).Name; owner[field] == "" {
				t.Errorf("%s is no guard's: no --without changes it", field)
			}
		}
	}
	// Every guard off at once: every field holds its guard's mistake.
	all := changed(t, switches.Without(switches.Names()...))
	if len(all) != len(owner) {
		t.Errorf("every guard off changes %d fields, the guards one by one %d", len(all), len(owner))
	}
	for _, f := range all {
		one := changed(t, switches.Without(owner[f.field]))
		if i := slices.IndexFunc(one, func(g changedField) bool { return g.field == f.field }); i < 0 || one[i].ptr != f.ptr {
			t.Errorf("every guard off: %s = %s, not what --without %s alone puts there", f.field, f.isNow, owner[f.field])
		}
	}
}

func mistakes(rows []effect.Protection) []string {
	var out []string
	for _, p := range rows {
		if !slices.Contains(out, p.Mistake) {
			out = append(out, p.Mistake)
		}
	}
	return out
}

// A live set wires every guarded field of every part, whatever is off:
// each call then asks the set.
func TestLiveSetWiresEveryGuardedField(t *testing.T) {
	t.Parallel()
	var fields []string
	for _, name := range switches.Names() {
		for _, f := range changed(t, switches.Without(name)) {
			fields = append(fields, f.field)
		}
	}
	var live []string
	for _, f := range changed(t, (*switches.Set)(nil).Live()) {
		live = append(live, f.field)
	}
	slices.Sort(fields)
	slices.Sort(live)
	if !slices.Equal(live, fields) {
		t.Errorf("a live set wires %v, want the guarded fields %v", live, fields)
	}
}

// With a live set, the provider key is the message id while the guard is
// on, a fresh key per call once it is switched off, and the message id
// again once it is switched back on; another guard's switch leaves it alone.
func TestLiveProviderKey(t *testing.T) {
	t.Parallel()
	live := (*switches.Set)(nil).Live()
	key := consumerGuardsOf(live).ProviderKey
	if got := key("m1"); got != "m1" {
		t.Errorf("provider-key on: ProviderKey(m1) = %q, want m1", got)
	}
	mustSwitch(t, live, effect.GuardLedgerKey, true)
	if got := key("m1"); got != "m1" {
		t.Errorf("ledger-key off: ProviderKey(m1) = %q, want m1", got)
	}
	mustSwitch(t, live, effect.GuardProviderKey, true)
	first, second := key("m1"), key("m1")
	if first == "m1" || second == "m1" || first == second {
		t.Errorf("provider-key off: ProviderKey(m1) = %q then %q, want a fresh key per call", first, second)
	}
	mustSwitch(t, live, effect.GuardProviderKey, false)
	if got := key("m1"); got != "m1" {
		t.Errorf("provider-key back on: ProviderKey(m1) = %q, want m1", got)
	}

	// Off from the start in a live set: the mistake whatever the switch.
	fixed := switches.Without(effect.GuardProviderKey).Live()
	key = consumerGuardsOf(fixed).ProviderKey
	mustSwitch(t, fixed, effect.GuardProviderKey, false)
	if got := key("m1"); got == "m1" {
		t.Error("--without provider-key, switched on at run time: ProviderKey(m1) = m1, want the mistake kept")
	}
}

// With a live set, the consumer inbox is looked up while the guard is on
// (a message handled before is seen), never once it is switched off (the
// mistake does not touch the database: a nil *queries.Queries), and looked
// up again once it is switched back on.
func TestLiveInbox(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `INSERT INTO consumer_inbox (consumer, message_id) VALUES ('order_confirmed', 'm1')`); err != nil {
		t.Fatal(err)
	}
	q := queries.New(pool)
	live := (*switches.Set)(nil).Live()
	seen := consumerGuardsOf(live).InboxSeen
	if ok, err := seen(ctx, q, "order_confirmed", "m1"); err != nil || !ok {
		t.Errorf("inbox on: InboxSeen(m1) = %v, %v; want seen", ok, err)
	}
	if ok, err := seen(ctx, q, "order_confirmed", "m2"); err != nil || ok {
		t.Errorf("inbox on: InboxSeen(m2) = %v, %v; want not seen", ok, err)
	}
	mustSwitch(t, live, effect.GuardInbox, true)
	if ok, err := seen(ctx, nil, "order_confirmed", "m1"); err != nil || ok {
		t.Errorf("inbox off: InboxSeen(m1) = %v, %v; want never seen, without looking", ok, err)
	}
	mustSwitch(t, live, effect.GuardInbox, false)
	if ok, err := seen(ctx, q, "order_confirmed", "m1"); err != nil || !ok {
		t.Errorf("inbox back on: InboxSeen(m1) = %v, %v; want seen", ok, err)
	}
}

// With a live set, the webhook inbox takes an event once while the guard is
// on, every delivery of it once switched off, and once again when switched
// back on.
func TestLiveWebhookInbox(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx := t.Context()
	q := queries.New(pool)
	live := (*switches.Set)(nil).Live()
	g := webhookGuardsOf(live)
	ev := webhook.Event{ID: "evt_live", Type: "payment.succeeded", Data: webhook.EventData{OrderID: uuid.New()}}
	for i, want := range []effect.Outcome{effect.Applied, effect.AlreadyApplied} {
		if got, err := g.RecordEvent(ctx, q, ev); err != nil || got != want {
			t.Errorf("webhook-inbox on, delivery %d: %q, %v; want %q", i+1, got, err, want)
		}
	}
	mustSwitch(t, live, effect.GuardWebhookInbox, true)
	if got, err := g.RecordEvent(ctx, nil, ev); err != nil || got != effect.Applied {
		t.Errorf("webhook-inbox off: %q, %v; want %q without the inbox", got, err, effect.Applied)
	}
	mustSwitch(t, live, effect.GuardWebhookInbox, false)
	if got, err := g.RecordEvent(ctx, q, ev); err != nil || got != effect.AlreadyApplied {
		t.Errorf("webhook-inbox back on: %q, %v; want %q", got, err, effect.AlreadyApplied)
	}
}

// With a live set, a payment without an Idempotency-Key is refused while
// the guard is on, and goes on without one (to the order, here unknown) once
// it is switched off; back on, refused again.
func TestLiveIdempotencyKey(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	ctx := t.Context()
	live := (*switches.Set)(nil).Live()
	svc := switches.Payments(payment.NewService(pool, nil, payment.Config{}), live)
	req := payment.Request{OrderID: uuid.New()} // no key, no such order
	if _, err := svc.Pay(ctx, req); !errors.Is(err, payment.ErrKeyMissing) {
		t.Errorf("idempotency-key on: Pay without a key = %v, want %v", err, payment.ErrKeyMissing)
	}
	mustSwitch(t, live, effect.GuardIdempotencyKey, true)
	if _, err := svc.Pay(ctx, req); !errors.Is(err, order.ErrNotFound) {
		t.Errorf("idempotency-key off: Pay without a key = %v, want %v (no key asked)", err, order.ErrNotFound)
	}
	mustSwitch(t, live, effect.GuardIdempotencyKey, false)
	if _, err := svc.Pay(ctx, req); !errors.Is(err, payment.ErrKeyMissing) {
		t.Errorf("idempotency-key back on: Pay without a key = %v, want %v", err, payment.ErrKeyMissing)
	}
}

func mustSwitch(t *testing.T, s *switches.Set, name string, off bool) {
	t.Helper()
	if err := s.Switch(name, off); err != nil {
		t.Fatal(err)
	}
}
