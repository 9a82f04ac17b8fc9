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
// Effect protected: the charge is known to the service however the api's
// call ended. The api records a charge when it stores the gateway's answer;
// an api killed between the answer and storing it, or a client timeout, leaves
// nothing there, though the money moved. The provider's signed event is the
// second witness: with it, a refund can name the charge (the refund consumer
// reads OrderChargeID), the audit counts it, and no payment of the order goes
// to the gateway again, even once the gateway has forgotten its key.
// OrderChargeRecordFromEvent keeps a charge id recorded first, so the two
// witnesses, in either order or repeated, leave one charge.
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
