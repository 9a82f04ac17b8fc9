package payment

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// FaultBeforeGatewayCall fires between phase 1's commit and the gateway
// call; in Fail mode Pay returns fault.ErrInjected with the key left locked,
// as a crash there would leave it.
const FaultBeforeGatewayCall = "payment.before_gateway_call"

// FaultAfterGatewayCall fires between the gateway's answer and its record:
// in Crash mode the charge is made and only the provider's payment.succeeded
// records it (webhook.RecordCharge); in Fail mode Pay returns
// fault.ErrInjected with the key and the order's charge left locked.
const FaultAfterGatewayCall = "payment.after_gateway_call"

// Pay charges the order at most once, whatever the key, in three atomic
// phases:
//
//  1. claim the key and the order's charge in one transaction (claim.go,
//     charge.go): or answer from the store, or refuse with ErrKeyMismatch or
//     *InFlightError;
//  2. call the gateway with the key of the order's charge attempt (ChargeKey),
//     after asking it what it did for the order when an earlier holder of
//     the attempt got no definitive answer (askFirst, ask.go);
//  3. store the gateway's definitive answer, or release the key after a
//     transient failure (complete.go).
//
// Errors: ErrKeyMissing, ErrInvalidBody, order.ErrNotFound, ErrKeyMismatch,
// *InFlightError, ErrGatewayUnavailable, ErrOutcomeUnknown; anything else is an internal error
// after which the key is either untouched or locked until LockTimeout.
func (s *Service) Pay(ctx context.Context, req Request) (Response, error) {
	ctx = telemetry.WithOrderID(ctx, req.OrderID.String())
	ctx, step := telemetry.StartStep(ctx, nil, effect.Charge, effect.IdempotencyKey)
	resp, err := s.guards.Pay(s, ctx, req)
	switch {
	case err != nil:
		step.Fail(err)
	case resp.Replayed:
		step.End(effect.AlreadyApplied)
	default:
		step.End(effect.Applied)
	}
	return resp, err
}

// payUnderKey is Pay under the Idempotency-Key: its three phases.
func (s *Service) payUnderKey(ctx context.Context, req Request) (Response, error) {
	if err := CheckKey(req.Key); err != nil {
		return Response{}, err
	}
	body, err := DecodeBody(req.Body)
	if err != nil {
		return Response{}, err
	}
	c, err := s.claim(ctx, req, body)
	if err != nil {
		return Response{}, err
	}
	if c.done {
		return c.resp, nil
	}
	if err := s.faults.Hit(FaultBeforeGatewayCall); err != nil {
		// A crash here: the key stays locked until LockTimeout.
		return Response{}, fmt.Errorf("pay order %s: %w", req.OrderID, err)
	}
	if c.unknown {
		if resp, done, err := s.guards.AskFirst(s, ctx, c); done {
			return resp, err
		}
	}
	answer, callErr := s.gw.Charge(ctx, c.gatewayKey, ChargeRequest{
		OrderID: c.order.ID.String(), AmountCents: c.order.AmountCents, Currency: c.order.Currency,
	})
	if err := s.faults.Hit(FaultAfterGatewayCall); err != nil {
		// A crash here: the money moved and no answer is stored.
		return Response{}, fmt.Errorf("pay order %s: %w", req.OrderID, err)
	}
	return s.complete(ctx, c, answer, callErr)
}

// PayWithoutKey is the mistake the Idempotency-Key prevents (--without
// idempotency-key): no key store, a fresh gateway key per request, so a
// client retrying after a timeout is charged again.
func PayWithoutKey(s *Service, ctx context.Context, req Request) (Response, error) {
	if _, err := DecodeBody(req.Body); err != nil {
		return Response{}, err
	}
	o, err := order.Get(ctx, queries.New(s.pool), req.OrderID)
	if err != nil {
		return Response{}, err
	}
	gatewayKey := uuid.NewString()
	answer, err := s.gw.Charge(ctx, gatewayKey, ChargeRequest{
		OrderID: o.ID.String(), AmountCents: o.AmountCents, Currency: o.Currency,
	})
	// The record the audit counts is kept even here, to show the damage.
	if recErr := recordCall(context.WithoutCancel(ctx), queries.New(s.pool), o.ID, gatewayKey, answer); recErr != nil {
		return Response{}, recErr
	}
	switch {
	case err != nil:
		return Response{}, fmt.Errorf("%w: %v", ErrGatewayUnavailable, err)
	case answer.Status/100 == 2 && json.Valid(answer.Body):
		return chargedResponse(o.ID, answer.Body), nil
	case answer.Status/100 == 4:
		return refusedResponse(answer), nil
	default:
		return Response{}, fmt.Errorf("%w: gateway answered %s", ErrGatewayUnavailable, http.StatusText(answer.Status))
	}
}
