package refund

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/platform/strictjson"
)

var (
	// ErrNotRefundable (409): the order is not paid (pending: nothing to
	// give back; refunded: given back already) and no refund was asked
	// under this key.
	ErrNotRefundable = errors.New("order is not refundable")
	// ErrAlreadyRequested (409): the order's refund was asked before, under
	// another key or by the service itself (an order it could not fulfil).
	ErrAlreadyRequested = errors.New("a refund of this order was already requested")
	// ErrInvalidBody (400): the body is not a refund request.
	ErrInvalidBody = errors.New("invalid refund request body")
)

// maxNoteLength bounds the free-text note of a refund request, in bytes.
const maxNoteLength = 200

// Body is POST /orders/{id}/refunds's optional body. The refund is always of
// the whole order: the service refunds orders, not amounts.
type Body struct {
	// Note is the reason given by whoever asked, kept in the answer.
	Note string `json:"note,omitempty"`
}

// Response is what the HTTP layer writes back verbatim, as for payments.
type Response struct {
	Status int
	Body   []byte
	// Replayed: this key asked before; this request did nothing.
	Replayed bool
}

// answer is the body of a 201.
type answer struct {
	OrderID uuid.UUID `json:"order_id"`
	Refund  string    `json:"refund"`
	Reason  string    `json:"reason"`
	Note    string    `json:"note,omitempty"`
}

// Request records a customer's refund of a paid order under an
// Idempotency-Key, with the semantics of payments: the same key and body get
// the first answer again (Replayed); the same key with another body is
// payment.ErrKeyMismatch (422); a missing key is payment.ErrKeyMissing (400).
// A refund already asked under another key, or by the service, is
// ErrAlreadyRequested; an order that is not paid is ErrNotRefundable.
//
// In one transaction it locks the order, checks it, and writes the refund
// intent and the refund_requested message (the outbox): the refund happens
// exactly when the request was recorded. The answer is 201 "requested": the
// money moves when the consumer of refund_requested has asked the gateway,
// and GET /orders/{id} says refunded once it has.
func Request(ctx context.Context, pool *pgxpool.Pool, orderID uuid.UUID, key string, body []byte) (Response, error) {
	if err := payment.CheckKey(key); err != nil {
		return Response{}, err
	}
	b, err := decodeBody(body)
	if err != nil {
		return Response{}, err
	}
	fp := fingerprint(orderID, b)
	var resp Response
	err = postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		o, err := q.OrderGetForUpdate(ctx, orderID)
		if errors.Is(err, pgx.ErrNoRows) {
			return order.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock order %s: %w", orderID, err)
		}
		prior, err := q.RefundRequestGet(ctx, orderID)
		switch {
		case err == nil:
			resp, err = replay(prior, key, fp)
			return err
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read the refund of order %s: %w", orderID, err)
		}
		if o.Status != order.StatusPaid {
			return fmt.Errorf("%w: it is %s", ErrNotRefundable, o.Status)
		}
		out, err := json.Marshal(answer{OrderID: orderID, Refund: "requested", Reason: messages.ReasonCustomerRequest, Note: b.Note})
		if err != nil {
			return err
		}
		outcome, err := record(ctx, tx, orderID, messages.ReasonCustomerRequest, key, fp, out)
		if err != nil {
			return err
		}
		if outcome == effect.AlreadyApplied { // the primary key: whoever asked first holds the refund
			return ErrAlreadyRequested
		}
		resp = Response{Status: http.StatusCreated, Body: out}
		return nil
	})
	return resp, err
}

// replay answers a request for an order whose refund was asked before.
func replay(prior queries.RefundRequest, key, fp string) (Response, error) {
	if !prior.IdempotencyKey.Valid || prior.IdempotencyKey.String != key {
		return Response{}, fmt.Errorf("%w (%s)", ErrAlreadyRequested, prior.Reason)
	}
	if prior.Fingerprint.String != fp {
		return Response{}, payment.ErrKeyMismatch
	}
	return Response{Status: http.StatusCreated, Body: prior.ResponseBody, Replayed: true}, nil
}

// Compensate records the refund of a paid order the service cannot fulfil
// (reason messages.ReasonOutOfStock), in tx, the transaction that found the
// stock short. It returns Applied when this call recorded it and
// AlreadyApplied when the order's refund was asked before, by anyone.
func Compensate(ctx context.Context, tx pgx.Tx, orderID uuid.UUID) (effect.Outcome, error) {
	return record(ctx, tx, orderID, messages.ReasonOutOfStock, "", "", nil)
}

// record writes the order's refund intent and, if this call wrote it, the
// refund_requested message, in tx.
func record(ctx context.Context, tx pgx.Tx, orderID uuid.UUID, reason, key, fp string, response []byte) (effect.Outcome, error) {
	n, err := queries.New(tx).RefundRequestInsert(ctx, queries.RefundRequestInsertParams{
		OrderID: orderID, Reason: reason,
		IdempotencyKey: textOrNull(key), Fingerprint: textOrNull(fp), ResponseBody: response,
	})
	if err != nil {
		return "", fmt.Errorf("record the refund of order %s: %w", orderID, err)
	}
	if n == 0 {
		return effect.AlreadyApplied, nil
	}
	msg, err := messages.NewRefundRequested(messages.RefundRequested{OrderID: orderID, Reason: reason})
	if err != nil {
		return "", err
	}
	if err := outbox.Publish(ctx, tx, messages.TopicRefundRequested, msg); err != nil {
		return "", err
	}
	return effect.Applied, nil
}

// decodeBody reads an optional body: empty, or a JSON object with an
// optional note.
func decodeBody(body []byte) (Body, error) {
	var b Body
	if len(bytes.TrimSpace(body)) == 0 {
		return b, nil
	}
	if err := strictjson.Decode(body, &b); err != nil {
		return b, fmt.Errorf("%w: %w", ErrInvalidBody, err)
	}
	if len(b.Note) > maxNoteLength {
		return b, fmt.Errorf("%w: field \"note\" is longer than %d bytes", ErrInvalidBody, maxNoteLength)
	}
	return b, nil
}

// fingerprint identifies the request a key was first used for, as for
// payments: the order and the canonical body.
func fingerprint(orderID uuid.UUID, b Body) string {
	canonical, _ := json.Marshal(b)
	h := sha256.New()
	h.Write([]byte("POST /orders/" + orderID.String() + "/refunds\n"))
	h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil))
}

func textOrNull(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }
