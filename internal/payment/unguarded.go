package payment

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// PayWithoutKey is the mistake the Idempotency-Key prevents (payUnderKey),
// which the lab wires in its place (--without idempotency-key): no key
// store and a fresh gateway key per request, so a client that retries after
// a timeout is charged again.
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
	// The record the audit counts is kept even here, so the audit shows the
	// damage.
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
