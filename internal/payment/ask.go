package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// ErrOutcomeUnknown (409, a problem type of its own): an earlier attempt
// to charge the order got no definitive answer (a timeout, a crash after the
// call), and the gateway could not be asked what it did. Nothing is sent:
// sending again blind would charge twice if the first call did charge and
// the gateway has forgotten its key. The charge is given back, so the next
// request asks again.
var ErrOutcomeUnknown = errors.New("the outcome of an earlier attempt to charge this order is unknown; it is being checked")

// ProblemOutcomeUnknown is the problem type of ErrOutcomeUnknown's 409.
const ProblemOutcomeUnknown = "urn:orderpaid:problem:outcome-unknown"

// ChargesOf asks the gateway for the charges it made for the order (GET
// /charges?order_id=, a real gateway's search by metadata): what it did,
// which it keeps for good, unlike its memory of Idempotency-Keys. Each
// charge comes as the gateway's JSON object.
func (c *GatewayClient) ChargesOf(ctx context.Context, orderID uuid.UUID) ([]json.RawMessage, error) {
	return c.lookup(ctx, "/charges", orderID)
}

// RefundsOf asks the gateway for the refunds it made of the order's charges
// (GET /refunds?order_id=).
func (c *GatewayClient) RefundsOf(ctx context.Context, orderID uuid.UUID) ([]json.RawMessage, error) {
	return c.lookup(ctx, "/refunds", orderID)
}

// lookup GETs path?order_id= and returns the records of the answer. Any
// answer but a 200 with a JSON array is an error: the gateway could not
// say.
func (c *GatewayClient) lookup(ctx context.Context, path string, orderID uuid.UUID) ([]json.RawMessage, error) {
	u := c.baseURL + path + "?" + url.Values{"order_id": {orderID.String()}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("build %s look-up: %w", path, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask the payment gateway (%s): %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxGatewayBody))
	if err != nil {
		return nil, fmt.Errorf("read the gateway's %s look-up: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ask the payment gateway (%s): it answered %d", path, resp.StatusCode)
	}
	var found []json.RawMessage
	if err := json.Unmarshal(body, &found); err != nil {
		return nil, fmt.Errorf("decode the gateway's %s look-up: %w", path, err)
	}
	return found, nil
}

// askFirst is phase 2 for an attempt whose outcome is unknown (c.unknown:
// taken over from a holder that crashed, timed out or got no definitive
// answer): before sending the charge again, it asks the gateway what it did
// for the order.
//
//   - it made a charge: that charge is this request's answer, stored and
//     settled as if the gateway had replayed it (done true); nothing is sent;
//   - it made none: done false, the caller sends the attempt, under its key;
//   - it cannot say: the key and the charge are given back and the request
//     is refused with ErrOutcomeUnknown; nothing is sent.
//
// Failure it prevents: a charge whose answer was lost sent again blind, when
// the gateway has forgotten its key (keys live about a day; a provider's
// webhook may be days late) and so charges a second time.
//
// Its span answers already_applied when the gateway had charged, and
// not_applicable when it had not.
func (s *Service) askFirst(ctx context.Context, c claimed) (resp Response, done bool, err error) {
	ctx, step := telemetry.StartStep(ctx, nil, effect.Charge, effect.AskFirst)
	found, err := s.gw.ChargesOf(ctx, c.order.ID)
	if err != nil {
		step.Fail(err)
		return Response{}, true, s.release(context.WithoutCancel(ctx), c, GatewayAnswer{}, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err))
	}
	if len(found) == 0 {
		step.End(effect.NotApplicable)
		return Response{}, false, nil
	}
	step.End(effect.AlreadyApplied)
	// The gateway's word: the order is charged. Recorded as a replayed
	// answer, so the audit counts the charge once by its id.
	answer := GatewayAnswer{Status: http.StatusOK, Body: found[0], Replayed: true}
	resp, err = s.store(context.WithoutCancel(ctx), c, answer, chargedResponse(c.order.ID, found[0]), chargeCharged)
	return resp, true, err
}

// SendBlind is the mistake askFirst prevents: an attempt whose outcome is
// unknown is sent again without asking, trusting the gateway to remember
// its key. Once the gateway has forgotten it, the order is charged twice.
func SendBlind(*Service, context.Context, claimed) (Response, bool, error) {
	return Response{}, false, nil
}
