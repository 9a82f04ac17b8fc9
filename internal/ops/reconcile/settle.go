package reconcile

import (
	"context"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// settleFunc settles one finding and says what it did.
type settleFunc func(ctx context.Context, r *Reconciler) (string, error)

// The actions of reconcile_actions (migration 00016), one per kind it
// settles.
const (
	actionChargeCompleted    = "charge_completed"
	actionChargeReleased     = "charge_released"
	actionRefundRecorded     = "refund_recorded"
	actionConfirmationResent = "confirmation_resent"
)

// completeCharge accepts the charge the gateway made as its payment.succeeded
// would have been: the charge is recorded on the order's intent and
// order_paid is enqueued, and the consumer pays the order under its guards.
// The event's id comes from the charge, so the webhook inbox answers a
// second run (or a concurrent one) AlreadyApplied. It never calls the
// gateway.
func completeCharge(o queries.ReconcileOrdersRow, c Charge) settleFunc {
	return func(ctx context.Context, r *Reconciler) (string, error) {
		ev := webhook.Event{ID: "evt_reconcile_" + c.ID, Type: webhook.EventPaymentSucceeded,
			Data: webhook.EventData{OrderID: o.ID, AmountCents: c.AmountCents, ChargeID: c.ID}}
		return r.accept(ctx, ev, actionChargeCompleted, c.ID, o.ID, "completed: the charge recorded, order_paid enqueued")
	}
}

// recordRefund accepts the refund the gateway made as its payment.refunded
// would have been: order_refunded is enqueued and the consumer applies the
// refund (the order refunded, stock back, commission reversed) under its
// guards.
func recordRefund(o queries.ReconcileOrdersRow, f Refund) settleFunc {
	return func(ctx context.Context, r *Reconciler) (string, error) {
		ev := webhook.Event{ID: "evt_reconcile_" + f.ID, Type: webhook.EventPaymentRefunded,
			Data: webhook.EventData{OrderID: o.ID, AmountCents: f.AmountCents, ChargeID: f.ChargeID}}
		return r.accept(ctx, ev, actionRefundRecorded, f.ID, o.ID, "recorded: order_refunded enqueued")
	}
}

// accept hands ev to the webhook flow, then records the action (a run that
// died between the two records it on the next run: accept answers
// AlreadyApplied, the row is written).
func (r *Reconciler) accept(ctx context.Context, ev webhook.Event, action, key string, orderID uuid.UUID, done string) (string, error) {
	res, err := r.events.Accept(ctx, ev)
	if err != nil {
		return "", err
	}
	if _, err := queries.New(r.pool).ReconcileActionInsert(ctx, queries.ReconcileActionInsertParams{
		Action: action, Key: key, OrderID: orderID, Detail: ev.ID,
	}); err != nil {
		return "", fmt.Errorf("record action %s %s: %w", action, key, err)
	}
	if res.Outcome == effect.AlreadyApplied {
		return "already settled (event " + ev.ID + " was accepted before)", nil
	}
	return done, nil
}

// releaseCharge gives back an attempt left charging past its lease whose
// gateway key the gateway does not know: no money moved, and the next
// request takes the attempt over under the same key. The update holds only
// while the attempt is still charging past its lease, so a request that
// took it over meanwhile keeps it, and of two runs one releases.
func releaseCharge(o queries.ReconcileOrdersRow, gatewayKey string) settleFunc {
	return func(ctx context.Context, r *Reconciler) (string, error) {
		released := false
		err := postgres.InTx(ctx, r.pool, func(tx pgx.Tx) error {
			q := queries.New(tx)
			n, err := q.ReconcileChargeRelease(ctx, queries.ReconcileChargeReleaseParams{OrderID: o.ID, Attempt: o.ChargeAttempt.Int32})
			if err != nil || n == 0 {
				return err
			}
			released = true
			_, err = q.ReconcileActionInsert(ctx, queries.ReconcileActionInsertParams{
				Action: actionChargeReleased, Key: gatewayKey, OrderID: o.ID, Detail: "attempt " + strconv.Itoa(int(o.ChargeAttempt.Int32)),
			})
			return err
		})
		if err != nil || !released {
			return "already settled (taken over or released since)", err
		}
		return "released: the next request takes the attempt over under " + gatewayKey, nil
	}
}

// resendConfirmation writes the order's one order_confirmed to the outbox
// again, marked as replayed (the audit's confirmation_enqueued counts only
// the flow's own). Its message id is the consumer inbox's key and the
// provider's Idempotency-Key, so if the first one was only late, the e-mail
// still goes once. The action row, written in the same transaction, keeps
// two runs from writing it twice.
func resendConfirmation(o queries.ReconcileOrdersRow) settleFunc {
	return func(ctx context.Context, r *Reconciler) (string, error) {
		msg, err := messages.NewOrderConfirmed(o.ID)
		if err != nil {
			return "", err
		}
		msg.Metadata.Set(messages.MetadataReplayedBy, "orderpaid reconcile")
		resent := false
		err = postgres.InTx(ctx, r.pool, func(tx pgx.Tx) error {
			n, err := queries.New(tx).ReconcileActionInsert(ctx, queries.ReconcileActionInsertParams{
				Action: actionConfirmationResent, Key: msg.UUID, OrderID: o.ID, Detail: messages.TopicOrderConfirmed,
			})
			if err != nil || n == 0 {
				return err
			}
			resent = true
			return outbox.Publish(ctx, tx, messages.TopicOrderConfirmed, msg)
		})
		if err != nil || !resent {
			return "already settled (order_confirmed was resent before)", err
		}
		return "resent: order_confirmed " + msg.UUID + " in the outbox", nil
	}
}
