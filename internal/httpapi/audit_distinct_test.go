package httpapi_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// The audit counts money moved and e-mails sent, not the answers that
// reported them. A replayed answer names the charge or the notification
// first made, so one charge reported by the gateway's first answer, its
// replay (a redelivery with the same key) and the provider's signed event
// is one charge, and one e-mail logged by the first call and its replay is
// one e-mail. Counting rows instead of distinct ids would show a double
// charge, or a second e-mail, that never happened.
func TestAuditCountsEachChargeAndNotificationOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.paidOrder(t)
	ctx := context.Background()
	q := queries.New(b.pool)

	charge := pgtype.Text{String: "ch_1", Valid: true}
	for _, replayed := range []bool{false, true, true} {
		if err := q.GatewayChargeCallInsert(ctx, queries.GatewayChargeCallInsertParams{
			OrderID: o.ID, GatewayKey: "order:" + o.ID.String() + ":charge:1", Status: 201, ChargeID: charge, Replayed: replayed,
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.OrderChargeRecordFromEvent(ctx, queries.OrderChargeRecordFromEventParams{
		OrderID: o.ID, EventID: "evt_paid", ChargeID: charge,
	}); err != nil {
		t.Fatal(err)
	}
	for _, template := range []string{"order_confirmed", "order_refunded"} {
		for _, replayed := range []bool{false, true} {
			if err := q.NotificationLogInsert(ctx, queries.NotificationLogInsertParams{
				OrderID: o.ID, MessageID: template + "-msg", IdempotencyKey: template + "-msg",
				ProviderNotificationID: "ntf_" + template, Replayed: replayed, Template: template,
			}); err != nil {
				t.Fatal(err)
			}
		}
	}

	a := b.audit(t, o.ID)
	for _, name := range []string{effect.Charges, effect.NotificationSent, effect.RefundNotified} {
		if got := a.Effects[name]; got != 1 {
			t.Errorf("%s = %d, want 1: every row of it names the same id", name, got)
		}
	}
}
