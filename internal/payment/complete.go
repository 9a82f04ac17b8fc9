package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// complete is phase 3: it turns the gateway's answer into our response and
// stores it under the key, together with what it settles about the order's
// charge, or releases both when the answer may change on a retry.
//
//   - 2xx: charged. Stored, 201 {"order_id","status":"charged","charge":{...}},
//     and the order's charge is settled: no request calls the gateway again.
//   - a refusal about the payment (finalRefusal: a declined card, a payment
//     the gateway cannot process): the same request would be refused the
//     same way, so the refusal is stored, 402 problem, and the order may try
//     its next attempt.
//   - no answer, 5xx, and the 4xx that are not about the payment (a 429 says
//     "not now"; a 401 says our configuration is wrong): not stored. The key
//     and the order's charge are released so a retry runs at once, and
//     ErrGatewayUnavailable is returned.
//
// Every answer is recorded in gateway_charge_calls, the service's own record
// of its gateway calls that the audit's "charges" counts.
//
// It runs on a context that is not cancelled with the request: once the
// gateway may have moved money, a client hanging up must not stop us from
// recording what happened.
func (s *Service) complete(ctx context.Context, c claimed, answer GatewayAnswer, callErr error) (Response, error) {
	ctx = context.WithoutCancel(ctx)
	switch {
	case callErr == nil && answer.Status/100 == 2 && json.Valid(answer.Body):
		return s.store(ctx, c, answer, chargedResponse(c.order.ID, answer.Body), chargeCharged)
	case callErr == nil && finalRefusal(answer.Status):
		return s.store(ctx, c, answer, refusedResponse(answer), chargeRefused)
	}
	cause := callErr
	if cause == nil {
		cause = fmt.Errorf("gateway answered %d: %.200s", answer.Status, answer.Body)
	}
	return Response{}, s.release(ctx, c, answer, cause)
}

// finalRefusal reports whether a 4xx refuses the payment itself, so that
// sending it again would be refused again: 402 (declined) and 422 (the
// gateway understood the charge and will not make it). The other 4xx say
// "not now" (408, 409, 425, 429) or "your side is wrong" (400, 401, 403, 404:
// a malformed call, a revoked API key, a wrong FAKES_URL): storing those for
// the key's retention would keep refusing the customer after the fix.
func finalRefusal(status int) bool {
	return status == http.StatusPaymentRequired || status == http.StatusUnprocessableEntity
}

// store saves resp as the key's response and settles the order's charge
// attempt as state, in one transaction with the record of the call.
//
// IdempotencyKeyComplete only changes a key that has no response yet: if
// another request completed the key first (our lock expired during a slow
// gateway call and a retry recovered it), that response stands and is
// returned, Replayed. Both came from the gateway under the same key, so
// they name the same charge.
func (s *Service) store(ctx context.Context, c claimed, answer GatewayAnswer, resp Response, state string) (Response, error) {
	out := resp
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := recordCall(ctx, q, c.order.ID, c.gatewayKey, answer); err != nil {
			return err
		}
		// Without a claimed attempt (attempt 0: NoChargeClaim) this
		// matches no row.
		if _, err := q.OrderChargeSettle(ctx, queries.OrderChargeSettleParams{
			OrderID: c.order.ID, Attempt: c.attempt, State: state, ChargeID: answeredChargeID(answer),
		}); err != nil {
			return fmt.Errorf("settle the charge: %w", err)
		}
		n, err := q.IdempotencyKeyComplete(ctx, completeParams(&c, resp))
		if err != nil || n == 1 {
			return err
		}
		row, err := q.IdempotencyKeyGet(ctx, queries.IdempotencyKeyGetParams{Scope: c.scope, Key: c.key})
		if err != nil {
			return fmt.Errorf("read response stored by another request: %w", err)
		}
		if row.CompletedAt == nil {
			return errors.New("key neither completed nor completable")
		}
		out = Response{Status: int(row.ResponseStatus.Int32), Body: row.ResponseBody, Replayed: true}
		return nil
	})
	if err != nil {
		return Response{}, fmt.Errorf("store response for key of order %s: %w", c.order.ID, err)
	}
	return out, nil
}

// release gives the key and the order's charge back after an answer that
// settles nothing, records that answer, and returns the error for it,
// wrapping ErrGatewayUnavailable. If the release fails, both stay locked
// until LockTimeout: slower for the client, never unsafe.
func (s *Service) release(ctx context.Context, c claimed, answer GatewayAnswer, cause error) error {
	err := fmt.Errorf("%w: %w", ErrGatewayUnavailable, cause)
	relErr := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := recordCall(ctx, q, c.order.ID, c.gatewayKey, answer); err != nil {
			return err
		}
		if err := q.OrderChargeRelease(ctx, queries.OrderChargeReleaseParams{
			OrderID: c.order.ID, Attempt: c.attempt, HolderScope: c.scope, HolderKey: c.key,
		}); err != nil {
			return fmt.Errorf("release the charge: %w", err)
		}
		return q.IdempotencyKeyRelease(ctx, queries.IdempotencyKeyReleaseParams{Scope: c.scope, Key: c.key})
	})
	if relErr != nil {
		return errors.Join(err, fmt.Errorf("release idempotency key: %w", relErr))
	}
	return err
}

// recordCall writes the gateway's answer to gateway_charge_calls. A call that
// got no answer (Status 0) leaves nothing to record: whether it charged is
// learnt from the retry, which sends the same gateway key.
func recordCall(ctx context.Context, q *queries.Queries, orderID uuid.UUID, gatewayKey string, answer GatewayAnswer) error {
	if answer.Status == 0 {
		return nil
	}
	err := q.GatewayChargeCallInsert(ctx, queries.GatewayChargeCallInsertParams{
		OrderID: orderID, GatewayKey: gatewayKey, Status: int32(answer.Status),
		ChargeID: answeredChargeID(answer), Replayed: answer.Replayed,
	})
	if err != nil {
		return fmt.Errorf("record the gateway's answer: %w", err)
	}
	return nil
}

// answeredChargeID is the charge id a 2xx answer names; NULL for any other
// answer, or one without an id.
func answeredChargeID(answer GatewayAnswer) pgtype.Text {
	var charge struct {
		ID string `json:"id"`
	}
	if answer.Status/100 == 2 && json.Unmarshal(answer.Body, &charge) == nil && charge.ID != "" {
		return pgtype.Text{String: charge.ID, Valid: true}
	}
	return pgtype.Text{}
}

func completeParams(c *claimed, resp Response) queries.IdempotencyKeyCompleteParams {
	return queries.IdempotencyKeyCompleteParams{
		Scope: c.scope, Key: c.key,
		ResponseStatus: pgtype.Int4{Int32: int32(resp.Status), Valid: true},
		ResponseBody:   resp.Body,
	}
}
