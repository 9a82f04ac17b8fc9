package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/db"
)

// complete is phase 3: it turns the gateway's answer into our response and
// stores it under the key, or releases the key when the answer may change on
// a retry.
//
//   - 2xx: charged. Stored, 201 {"order_id","status":"charged","charge":{...}}.
//   - 4xx (a declined card, a request the gateway refuses): the same request
//     would be refused the same way, so the refusal is stored, 402 problem.
//     Except 408, 409, 425 and 429, which say "not now" rather than "no".
//   - no answer, 5xx, anything else: not stored. The key is released so the
//     client's retry runs at once, and ErrGatewayUnavailable is returned.
//
// It runs on a context that is not cancelled with the request: once the
// gateway may have moved money, a client hanging up must not stop us from
// recording what happened.
func (s *Service) complete(ctx context.Context, c claimed, answer GatewayAnswer, callErr error) (Response, error) {
	ctx = context.WithoutCancel(ctx)
	var resp Response
	switch {
	case callErr == nil && answer.Status/100 == 2 && json.Valid(answer.Body):
		resp = chargedResponse(c.order.ID, answer.Body)
	case callErr == nil && answer.Status/100 == 4 && !transient(answer.Status):
		resp = refusedResponse(answer)
	default:
		cause := callErr
		if cause == nil {
			cause = fmt.Errorf("gateway answered %d: %.200s", answer.Status, answer.Body)
		}
		return Response{}, s.release(ctx, c, cause)
	}
	return s.store(ctx, c, resp)
}

// transient reports whether a 4xx status asks the caller to come back later.
func transient(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return false
}

// store saves resp as the key's response. IdempotencyKeyComplete only
// changes a key that has no response yet: if another request completed the
// key first (our lock expired during a slow gateway call and a retry
// recovered it), that response stands and is returned, Replayed. Both came
// from the gateway under the same derived key, so they name the same charge.
func (s *Service) store(ctx context.Context, c claimed, resp Response) (Response, error) {
	n, err := db.New(s.pool).IdempotencyKeyComplete(ctx, completeParams(&c, resp))
	if err != nil {
		return Response{}, fmt.Errorf("store response for key of order %s: %w", c.order.ID, err)
	}
	if n == 1 {
		return resp, nil
	}
	row, err := db.New(s.pool).IdempotencyKeyGet(ctx, db.IdempotencyKeyGetParams{Scope: c.scope, Key: c.key})
	if err != nil {
		return Response{}, fmt.Errorf("read response stored by another request: %w", err)
	}
	if row.CompletedAt == nil {
		return Response{}, fmt.Errorf("store response for key of order %s: key neither completed nor completable", c.order.ID)
	}
	return Response{Status: int(row.ResponseStatus.Int32), Body: row.ResponseBody, Replayed: true}, nil
}

// release gives the key back after a transient failure and returns the error
// for it, wrapping ErrGatewayUnavailable. If the release itself fails, the
// key stays locked until LockTimeout: slower for the client, never unsafe.
func (s *Service) release(ctx context.Context, c claimed, cause error) error {
	err := fmt.Errorf("%w: %w", ErrGatewayUnavailable, cause)
	relErr := db.New(s.pool).IdempotencyKeyRelease(ctx, db.IdempotencyKeyReleaseParams{Scope: c.scope, Key: c.key})
	if relErr != nil {
		return errors.Join(err, fmt.Errorf("release idempotency key: %w", relErr))
	}
	return err
}

func completeParams(c *claimed, resp Response) db.IdempotencyKeyCompleteParams {
	return db.IdempotencyKeyCompleteParams{
		Scope: c.scope, Key: c.key,
		ResponseStatus: pgtype.Int4{Int32: int32(resp.Status), Valid: true},
		ResponseBody:   resp.Body,
	}
}
