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

// complete is phase 3: it stores our response to the gateway's answer with
// what it settles about the order's charge (store), or gives the key and the
// charge back when a retry may be answered otherwise (release):
//
//   - 2xx: charged, 201, the order's charge settled;
//   - a refusal of the payment (finalRefusal): 402, stored; a next attempt may follow;
//   - no answer, a 5xx, another 4xx: key released, ErrGatewayUnavailable.
//
// Its context outlives the request: a client hanging up once money may have
// moved must not stop us recording it.
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
	return Response{}, s.release(ctx, c, answer, fmt.Errorf("%w: %w", ErrGatewayUnavailable, cause))
}

// finalRefusal reports whether a 4xx refuses the payment itself: 402 and
// 422. Other 4xx say "not now" (408, 409, 425, 429) or "our side is wrong"
// (400, 401, 403, 404): stored, they would refuse the customer after the fix.
func finalRefusal(status int) bool {
	return status == http.StatusPaymentRequired || status == http.StatusUnprocessableEntity
}

// refusedResponse is the 402 stored for a refusal for good, repeating the
// gateway's problem detail when it sent one.
func refusedResponse(answer GatewayAnswer) Response {
	var gw problem
	reason := http.StatusText(answer.Status)
	if json.Unmarshal(answer.Body, &gw) == nil && gw.Detail != "" {
		reason = gw.Detail
	}
	detail := fmt.Sprintf("the payment gateway refused the charge (%d): %s", answer.Status, reason)
	return Response{Status: http.StatusPaymentRequired, Body: problemBody(http.StatusPaymentRequired, "Payment refused", detail)}
}

// chargedResponse is the 201 of a charge, with the gateway's charge object.
func chargedResponse(orderID uuid.UUID, charge []byte) Response {
	body, _ := json.Marshal(struct { // valid JSON (checked by the caller) always encodes
		OrderID uuid.UUID       `json:"order_id"`
		Status  string          `json:"status"`
		Charge  json.RawMessage `json:"charge"`
	}{orderID, "charged", charge})
	return Response{Status: http.StatusCreated, Body: body}
}

// store saves resp as the key's response and settles the order's charge
// attempt as state, in one transaction with the record of the call. A key
// another request completed first (our lock expired during a slow call and
// a retry recovered it) keeps its response, returned Replayed: both came
// from the gateway under the same key, so they name the same charge.
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

// release records an answer that settles nothing, gives the key and the
// charge back (still charging, outcome unknown: the next request asks first)
// and returns err. If it fails, both stay locked until LockTimeout: slower,
// never unsafe.
func (s *Service) release(ctx context.Context, c claimed, answer GatewayAnswer, err error) error {
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

func completeParams(c *claimed, resp Response) queries.IdempotencyKeyCompleteParams {
	return queries.IdempotencyKeyCompleteParams{
		Scope: c.scope, Key: c.key,
		ResponseStatus: pgtype.Int4{Int32: int32(resp.Status), Valid: true},
		ResponseBody:   resp.Body,
	}
}
