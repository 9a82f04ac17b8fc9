package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// A payment.succeeded records its charge on the order's payment intent
// (RecordCharge), whichever of the api's answer and the event comes first,
// and repeats of either leave one charge.
func TestPaymentSucceededRecordsTheCharge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("no claim: the event makes the row, charged", func(t *testing.T) {
		t.Parallel()
		pool, in, o := acceptSetup(t)
		mustIngest(t, in, "evt_1", o, "ch_event")
		mustIngest(t, in, "evt_1", o, "ch_event") // redelivered: the inbox answers
		ch := chargeRow(t, queries.New(pool), o)
		if ch.State != "charged" || ch.ChargeID.String != "ch_event" {
			t.Fatalf("order's charge = %s %v, want charged ch_event", ch.State, ch.ChargeID)
		}
	})

	t.Run("a claim whose answer was lost: the event settles it", func(t *testing.T) {
		t.Parallel()
		pool, in, o := acceptSetup(t)
		q := queries.New(pool)
		claimCharge(t, q, o)
		mustIngest(t, in, "evt_1", o, "ch_event")
		ch := chargeRow(t, q, o)
		if ch.State != "charged" || ch.LockedUntil != nil || ch.ChargeID.String != "ch_event" {
			t.Fatalf("order's charge = %s locked until %v, %v; want charged, unlocked, ch_event", ch.State, ch.LockedUntil, ch.ChargeID)
		}
		// The holder's answer comes after all: it changes nothing.
		if n, err := q.OrderChargeSettle(ctx, queries.OrderChargeSettleParams{
			OrderID: o.ID, Attempt: 1, State: "charged", ChargeID: pgtype.Text{String: "ch_event", Valid: true},
		}); err != nil || n != 0 {
			t.Fatalf("late settle: %d rows, %v; want 0", n, err)
		}
	})

	t.Run("the answer came first: its charge id stays", func(t *testing.T) {
		t.Parallel()
		pool, in, o := acceptSetup(t)
		q := queries.New(pool)
		claimCharge(t, q, o)
		if _, err := q.OrderChargeSettle(ctx, queries.OrderChargeSettleParams{
			OrderID: o.ID, Attempt: 1, State: "charged", ChargeID: pgtype.Text{String: "ch_answer", Valid: true},
		}); err != nil {
			t.Fatal(err)
		}
		mustIngest(t, in, "evt_other", o, "ch_other")
		if ch := chargeRow(t, q, o); ch.ChargeID.String != "ch_answer" {
			t.Fatalf("order's charge id = %v, want ch_answer (recorded first)", ch.ChargeID)
		}
	})
}

// mustIngest delivers a signed payment.succeeded for o naming chargeID.
func mustIngest(t *testing.T, in *webhook.Ingestor, eventID string, o queries.Order, chargeID string) {
	t.Helper()
	body := fmt.Appendf(nil, `{"id":%q,"type":"payment.succeeded","data":{"order_id":%q,"amount_cents":%d,"charge_id":%q}}`,
		eventID, o.ID, o.AmountCents, chargeID)
	if _, err := in.Ingest(context.Background(), webhook.Sign(testSecret, time.Now(), body), body); err != nil {
		t.Fatalf("ingest %s: %v", eventID, err)
	}
}

// claimCharge claims the order's charge as the api does before it calls the
// gateway (key k1, locked for a minute).
func claimCharge(t *testing.T, q *queries.Queries, o queries.Order) {
	t.Helper()
	if _, err := q.OrderChargeInsert(context.Background(), queries.OrderChargeInsertParams{
		OrderID: o.ID, HolderScope: o.CustomerID, HolderKey: "k1", LeaseMs: time.Minute.Milliseconds(),
	}); err != nil {
		t.Fatal(err)
	}
}

func chargeRow(t *testing.T, q *queries.Queries, o queries.Order) queries.OrderChargeGetRow {
	t.Helper()
	ch, err := q.OrderChargeGet(context.Background(), o.ID)
	if err != nil {
		t.Fatalf("read the order's charge: %v", err)
	}
	return ch
}
