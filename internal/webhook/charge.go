package webhook

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// RecordCharge records the charge a payment.succeeded names on the order's
// payment intent (order_charges, internal/payment/charge.go): its charge id,
// and the intent settled as charged. Other event types record nothing.
//
// Effect protected: the charge is known however the api's call ended (an api
// killed before storing the gateway's answer records nothing, though the money
// moved). The signed event is the second witness: a refund can name the
// charge, the audit counts it, and no payment goes to the gateway again.
// OrderChargeRecordFromEvent keeps the id recorded first: the two witnesses,
// in either order or repeated, leave one charge.
func RecordCharge(ctx context.Context, q *queries.Queries, ev Event) error {
	if ev.Type != EventPaymentSucceeded {
		return nil
	}
	err := q.OrderChargeRecordFromEvent(ctx, queries.OrderChargeRecordFromEventParams{
		OrderID: ev.Data.OrderID, EventID: ev.ID,
		ChargeID: pgtype.Text{String: ev.Data.ChargeID, Valid: ev.Data.ChargeID != ""},
	})
	if err != nil {
		return fmt.Errorf("record the charge of event %s: %w", ev.ID, err)
	}
	return nil
}

// RecordChargeUnguarded is the mistake RecordCharge prevents: the event's
// charge id is parsed and dropped, so the service knows a charge only from
// the api's answer, and a charge whose answer was lost cannot be refunded.
func RecordChargeUnguarded(context.Context, *queries.Queries, Event) error { return nil }
