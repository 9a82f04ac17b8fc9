package main

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// span is a finished span reduced to what the trace tests check, whether it
// came from the in-memory exporter or over OTLP.
type span struct {
	name, kind                string // kind: server, client, producer, consumer, internal
	traceID, spanID, parentID string
	attrs                     map[string]string
}

// spans is a set of finished spans.
type spans []span

func fromStubs(stubs tracetest.SpanStubs) spans {
	out := make(spans, 0, len(stubs))
	for _, s := range stubs {
		sp := span{
			name: s.Name, kind: s.SpanKind.String(),
			traceID: s.SpanContext.TraceID().String(), spanID: s.SpanContext.SpanID().String(),
			attrs: map[string]string{},
		}
		if s.Parent.IsValid() {
			sp.parentID = s.Parent.SpanID().String()
		}
		for _, a := range s.Attributes {
			sp.attrs[string(a.Key)] = a.Value.Emit()
		}
		out = append(out, sp)
	}
	return out
}

// where returns the spans for which keep is true.
func (ss spans) where(keep func(span) bool) spans {
	var out spans
	for _, s := range ss {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// named returns the spans called name.
func (ss spans) named(name string) spans {
	return ss.where(func(s span) bool { return s.name == name })
}

// inTrace returns the spans of one trace.
func (ss spans) inTrace(traceID string) spans {
	return ss.where(func(s span) bool { return s.traceID == traceID })
}

// children returns the spans whose parent is p and whose name is name.
func (ss spans) children(p span, name string) spans {
	return ss.where(func(s span) bool { return s.parentID == p.spanID && s.name == name })
}

// child returns the one child of p called name, with attributes want, and
// fails the test with the trace's tree if there is not exactly one.
func (ss spans) child(t *testing.T, p span, name string, want map[string]string) span {
	t.Helper()
	got := ss.children(p, name)
	if len(got) != 1 {
		t.Fatalf("span %q has %d children named %q, want 1; the trace:\n%s", p.name, len(got), name, ss.inTrace(p.traceID).tree())
	}
	for k, v := range want {
		if got[0].attrs[k] != v {
			t.Errorf("span %q: %s = %q, want %q", name, k, got[0].attrs[k], v)
		}
	}
	return got[0]
}

// tree draws the spans as an indented tree, for failure messages.
func (ss spans) tree() string {
	ids := map[string]bool{}
	for _, s := range ss {
		ids[s.spanID] = true
	}
	var b strings.Builder
	var draw func(parent string, depth int)
	draw = func(parent string, depth int) {
		var level spans
		for _, s := range ss {
			if s.parentID == parent || (depth == 0 && !ids[s.parentID]) {
				level = append(level, s)
			}
		}
		sort.Slice(level, func(i, j int) bool { return level[i].name < level[j].name })
		for _, s := range level {
			fmt.Fprintf(&b, "%s%s [%s] outcome=%s order.id=%s\n", strings.Repeat("  ", depth), s.name, s.kind,
				s.attrs["idempotency.outcome"], s.attrs["order.id"])
			draw(s.spanID, depth+1)
		}
	}
	draw("", 0)
	return b.String()
}

// effectAttrs is the attributes an effect span must have.
func effectAttrs(technique, outcome string) map[string]string {
	return map[string]string{"idempotency.technique": technique, "idempotency.outcome": outcome}
}

// checkOrderTrace checks the trace of one payment webhook, from the HTTP
// request to the provider call, and returns its spans:
//
//	POST /webhooks/payments
//	  webhook ingest
//	    effect payment_event_accepted           webhook_inbox applied
//	      outbox_write order_paid
//	        relay order_paid
//	          process order_paid
//	            effect paid                      state_check applied
//	            effect confirmation_enqueued     transactional_outbox applied
//	              outbox_write order_confirmed
//	                relay order_confirmed
//	                  process order_confirmed
//	                    effect confirmation_delivered    inbox applied
//	                      effect notification_sent       notification_claim       applied
//	                        POST /notifications
//	            effect commission                unique_ledger_key applied
//
// Every span of the trace, query spans included, must carry order.id.
func checkOrderTrace(t *testing.T, all spans, orderID, system string) spans {
	t.Helper()
	roots := all.named("POST /webhooks/payments").where(func(s span) bool { return s.attrs["order.id"] == orderID })
	if len(roots) != 1 {
		t.Fatalf("%d webhook request spans for order %s, want 1", len(roots), orderID)
	}
	root := roots[0]
	ss := all.inTrace(root.traceID)
	if root.parentID != "" || root.kind != "server" || root.attrs["http.route"] != "/webhooks/payments" {
		t.Errorf("webhook span: parent %q kind %s route %q, want a root SERVER span on /webhooks/payments", root.parentID, root.kind, root.attrs["http.route"])
	}
	for _, s := range ss {
		if s.attrs["order.id"] != orderID {
			t.Errorf("span %q [%s] has order.id %q, want %s", s.name, s.kind, s.attrs["order.id"], orderID)
		}
	}
	ingest := ss.child(t, root, "webhook ingest", nil)
	accepted := ss.child(t, ingest, "effect payment_event_accepted", effectAttrs("webhook_inbox", "applied"))
	orderPaid := hop(t, ss, accepted, "order_paid", system)
	paid := ss.child(t, orderPaid, "effect paid", effectAttrs("state_check", "applied"))
	ss.child(t, paid, "OrderMarkPaid", map[string]string{"db.system.name": "postgresql"})
	ss.child(t, orderPaid, "effect commission", effectAttrs("unique_ledger_key", "applied"))
	enqueued := ss.child(t, orderPaid, "effect confirmation_enqueued", effectAttrs("transactional_outbox", "applied"))
	confirmed := hop(t, ss, enqueued, "order_confirmed", system)
	delivered := ss.child(t, confirmed, "effect confirmation_delivered", effectAttrs("inbox", "applied"))
	sent := ss.child(t, delivered, "effect notification_sent", effectAttrs("notification_claim", "applied"))
	if call := ss.child(t, sent, "POST /notifications", nil); call.kind != "client" {
		t.Errorf("provider call span kind %s, want client", call.kind)
	}
	if t.Failed() {
		t.Logf("the trace:\n%s", ss.tree())
	}
	return ss
}

// hop checks outbox_write -> relay -> process for one topic under p and
// returns the consumer span.
func hop(t *testing.T, ss spans, p span, topic, system string) span {
	t.Helper()
	write := ss.child(t, p, "outbox_write "+topic, map[string]string{"messaging.destination.name": topic})
	relay := ss.child(t, write, "relay "+topic, map[string]string{"messaging.system": system, "messaging.destination.name": topic})
	process := ss.child(t, relay, "process "+topic, map[string]string{
		"messaging.system": system, "messaging.destination.name": topic, "messaging.operation.type": "process",
		"messaging.message.id": write.attrs["messaging.message.id"],
	})
	for _, s := range []span{write, relay, process} {
		if want := map[string]string{"outbox_write " + topic: "producer", "relay " + topic: "producer", "process " + topic: "consumer"}[s.name]; s.kind != want {
			t.Errorf("span %q kind %s, want %s", s.name, s.kind, want)
		}
	}
	return process
}
