package webhook

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// ErrAmountMismatch means the event's amount differs from the order's: the
// event is refused (422) rather than marking the order paid for the wrong sum.
var ErrAmountMismatch = errors.New("amount does not match the order")

// Ignored is the outcome for an event type this service does not act on: it
// is acknowledged (2xx) so the provider stops retrying, and nothing is written.
const Ignored effect.Outcome = "ignored"

// Result says what Ingest did with an event.
type Result struct {
	EventID string         `json:"event_id"`
	Outcome effect.Outcome `json:"outcome"`
}

// Ingest accepts one delivery. Errors, each writing nothing: a signature
// error (401), ErrMalformed (400), order.ErrNotFound (404), ErrAmountMismatch
// (422, a partial refund among them: orders are refunded whole). A duplicate
// returns AlreadyApplied. Its span, "webhook ingest", starts once the order is
// known, so everything under it carries order.id.
func (in *Ingestor) Ingest(ctx context.Context, signature string, body []byte) (Result, error) {
	if err := Verify(in.secret, signature, body, in.now(), in.tolerance); err != nil {
		in.metrics.SignatureFailure(ctx, signatureFailureReason(err))
		return Result{}, err
	}
	ev, err := Parse(body)
	if err != nil {
		return Result{}, err
	}
	if ev.Data.OrderID != uuid.Nil {
		ctx = telemetry.WithOrderID(ctx, ev.Data.OrderID.String()) // the request's span, and all below
	}
	ctx, span := telemetry.TracerFrom(ctx).Start(ctx, "webhook ingest", trace.WithAttributes(
		attribute.String("webhook.event.id", ev.ID), attribute.String("webhook.event.type", ev.Type)))
	res, err := in.Accept(ctx, ev)
	telemetry.EndSpan(span, err)
	return res, err
}

// Accept acts on a verified, parsed event: Ingest's second half, and the way
// in for one learnt otherwise (orderpaid reconcile). Errors:
// order.ErrNotFound, ErrAmountMismatch; a second Accept answers AlreadyApplied.
func (in *Ingestor) Accept(ctx context.Context, ev Event) (Result, error) {
	if !ev.movesOrder() {
		return Result{EventID: ev.ID, Outcome: Ignored}, nil
	}
	o, err := order.Get(ctx, queries.New(in.pool), ev.Data.OrderID)
	if err != nil {
		return Result{}, err
	}
	if o.AmountCents != ev.Data.AmountCents {
		return Result{}, fmt.Errorf("%w: event says %d, order %s is %d", ErrAmountMismatch, ev.Data.AmountCents, o.ID, o.AmountCents)
	}
	outcome, err := in.accept(ctx, ev)
	if err != nil {
		return Result{}, err
	}
	return Result{EventID: ev.ID, Outcome: outcome}, nil
}

// accept records the event in the webhook inbox, its charge (RecordCharge)
// and its message (order_paid, order_refunded) in one transaction: a
// duplicate, concurrent or not, writes nothing (docs/techniques/inbox.md).
func (in *Ingestor) accept(ctx context.Context, ev Event) (effect.Outcome, error) {
	outcome := effect.Applied
	ctx, step := telemetry.StartStep(ctx, in.metrics, effect.PaymentEventAccepted, effect.WebhookInbox)
	err := postgres.InTx(ctx, in.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		var err error
		if outcome, err = in.guards.RecordEvent(ctx, q, ev); err != nil || outcome != effect.Applied {
			return err
		}
		if err := in.guards.RecordCharge(ctx, q, ev); err != nil {
			return err
		}
		topic, msg, err := message(ev)
		if err != nil {
			return err
		}
		return outbox.Publish(ctx, tx, topic, msg)
	})
	if err != nil {
		err = fmt.Errorf("accept event %s: %w", ev.ID, err)
	}
	return outcome, step.Answer(outcome, err)
}

// RecordEvent records the event in the webhook inbox, keyed by its id:
// Applied the first time, AlreadyApplied (enqueuing nothing) after.
func RecordEvent(ctx context.Context, q *queries.Queries, ev Event) (effect.Outcome, error) {
	n, err := q.WebhookInboxInsert(ctx, queries.WebhookInboxInsertParams{
		EventID: ev.ID, EventType: ev.Type,
		OrderID: uuid.NullUUID{UUID: ev.Data.OrderID, Valid: true},
	})
	if err != nil {
		return "", fmt.Errorf("record event %s in the inbox: %w", ev.ID, err)
	}
	if n == 0 {
		return effect.AlreadyApplied, nil
	}
	return effect.Applied, nil
}

// RecordEventUnguarded is the mistake RecordEvent prevents: no inbox, so
// every delivery of an event enqueues its message again.
func RecordEventUnguarded(context.Context, *queries.Queries, Event) (effect.Outcome, error) {
	return effect.Applied, nil
}
