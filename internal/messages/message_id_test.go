package messages_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/messages"
)

// The order_paid message id is derived from its cause, never drawn at random:
// the same provider event for the same order gives the same id however often
// it is built (a webhook retried after a lost commit acknowledgement, a
// reprocess of the event), so every inbox downstream recognises the repeat.
// A different cause, or another order, gives another id.
func TestOrderPaidMessageIDIsDerivedFromItsCause(t *testing.T) {
	t.Parallel()
	orderA, orderB := uuid.MustParse("7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10"), uuid.MustParse("0b7e4c1a-5d7f-4f55-9a0e-3c2b1d4e5f60")
	id := func(orderID uuid.UUID, source string) string {
		t.Helper()
		msg, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: orderID, AmountCents: 10000, Source: source})
		if err != nil {
			t.Fatal(err)
		}
		return msg.UUID
	}

	first := id(orderA, "webhook:evt_1")
	for i := range 3 {
		if again := id(orderA, "webhook:evt_1"); again != first {
			t.Fatalf("build %d of order_paid for (order A, evt_1) has id %s, the first %s: want the same id every time", i+2, again, first)
		}
	}
	// Pinned, so a change of the derivation (which would make every message
	// in flight during a deploy look new to the inboxes) is a visible choice.
	if want := uuid.NewSHA1(uuid.MustParse("6f1b7a52-3c1e-4d7a-9a51-0e4d6b1f0a01"),
		[]byte("order_paid/webhook:evt_1/"+orderA.String())).String(); first != want {
		t.Errorf("id of order_paid for (order A, evt_1) = %s, want UUIDv5 %s", first, want)
	}
	for name, other := range map[string]string{
		"another event, same order": id(orderA, "webhook:evt_2"),
		"same event, another order": id(orderB, "webhook:evt_1"),
		"a backfill of the order":   id(orderA, "backfill"),
	} {
		if other == first {
			t.Errorf("%s has the id of (order A, evt_1), %s: want a different id", name, first)
		}
	}

	t.Run("order_confirmed: one id per order", func(t *testing.T) {
		a1, _ := messages.NewOrderConfirmed(orderA)
		a2, _ := messages.NewOrderConfirmed(orderA)
		b, _ := messages.NewOrderConfirmed(orderB)
		if a1.UUID != a2.UUID || a1.UUID == b.UUID {
			t.Errorf("order_confirmed ids: A %s and %s, B %s; want A's equal and B's different", a1.UUID, a2.UUID, b.UUID)
		}
	})
}
