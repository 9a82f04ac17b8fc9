package fakes

import (
	"cmp"
	"fmt"
	"net/http"
	"time"
)

// maxRetryAfterS bounds retry_after_s: an hour is already longer than any
// test or scenario waits.
const maxRetryAfterS = 3600

// GatewayControl is the misbehaviour the fake gateway is told to show, for
// scenarios and tests. The zero value is a well-behaved gateway. Charges and
// refunds share it, as one provider's outage takes both down: FailNext
// counts POST /charges and POST /refunds together, and DelayMS slows both.
type GatewayControl struct {
	// FailNext: the next FailNext POST /charges or POST /refunds, whichever
	// come, fail with FailStatus without charging or refunding (a provider
	// outage or a rate limit; the caller must retry with the same key).
	FailNext int `json:"fail_next"`
	// FailStatus is the HTTP status of those failures, 400 to 599; 0 means
	// 503 Service Unavailable.
	FailStatus int `json:"fail_status"`
	// RetryAfterS, when above 0, is sent with those failures as a
	// Retry-After header, in seconds (at most an hour).
	RetryAfterS int `json:"retry_after_s"`
	// DelayMS: every POST /charges and POST /refunds sleeps this long before
	// answering, after charging or refunding (the caller times out although
	// the money moved).
	DelayMS int `json:"delay_ms"`
	// DuplicateWebhooks: each new charge's or refund's webhook is delivered
	// 1+DuplicateWebhooks times, one after the other, with the same event id.
	DuplicateWebhooks int `json:"duplicate_webhooks"`
	// HoldWebhooks: webhooks wait, undelivered, while it is set; setting it
	// back to false lets them go. A webhook that arrives late, after the
	// client has retried (the crash matrix's "webhook late").
	HoldWebhooks bool `json:"hold_webhooks,omitempty"`
	// RefuseRefundsOf, an order id: every POST /refunds of that order's
	// charge is refused for good with RefuseStatus, as a provider refuses a
	// refund of a disputed charge or of one too old to refund: nothing is
	// refunded, nothing is stored under the key, and asking again, under any
	// key, is refused again for as long as the setting stays. Each refusal
	// is recorded (Refusals, GET /refund-refusals). Empty: none.
	RefuseRefundsOf string `json:"refuse_refunds_of,omitempty"`
	// RefuseStatus is the HTTP status of those refusals, 400 to 499; 0
	// means 402 Payment Required.
	RefuseStatus int `json:"refuse_status,omitempty"`
	// LookupFailNext: the next LookupFailNext look-ups by order (GET
	// /charges?order_id=, GET /refunds?order_id=) fail with 503: the
	// gateway takes charges, but cannot say what it did (lookup.go).
	LookupFailNext int `json:"lookup_fail_next,omitempty"`
}

func (c GatewayControl) validate() error {
	if c.FailNext < 0 || c.DelayMS < 0 || c.DuplicateWebhooks < 0 || c.LookupFailNext < 0 {
		return badRequest("fail_next, delay_ms, duplicate_webhooks and lookup_fail_next must not be negative")
	}
	if c.DuplicateWebhooks > maxRedeliveries {
		return badRequest("duplicate_webhooks must be at most %d", maxRedeliveries)
	}
	if c.RefuseStatus != 0 && (c.RefuseStatus < 400 || c.RefuseStatus > 499) {
		return badRequest("refuse_status must be a client error status, 400 to 499, got %d", c.RefuseStatus)
	}
	return validateFailure(c.FailStatus, c.RetryAfterS)
}

// NotifierControl is the misbehaviour the fake notification provider is told
// to show. The zero value is a well-behaved provider.
type NotifierControl struct {
	// FailNext: the next FailNext POST /notifications fail with FailStatus
	// without sending anything.
	FailNext int `json:"fail_next"`
	// FailStatus is the HTTP status of those failures, 400 to 599; 0 means
	// 503 Service Unavailable. 429 with RetryAfterS is a rate limit.
	FailStatus int `json:"fail_status"`
	// RetryAfterS, when above 0, is sent with those failures as a
	// Retry-After header, in seconds (at most an hour).
	RetryAfterS int `json:"retry_after_s"`
	// DelayMS: every POST /notifications sleeps this long before answering,
	// after sending (the caller times out although the e-mail is out).
	DelayMS int `json:"delay_ms"`
	// LookupFailNext: the next LookupFailNext GET /notifications?order_id=
	// fail with 503 (lookup.go).
	LookupFailNext int `json:"lookup_fail_next,omitempty"`
}

func (c NotifierControl) validate() error {
	if c.FailNext < 0 || c.DelayMS < 0 || c.LookupFailNext < 0 {
		return badRequest("fail_next, delay_ms and lookup_fail_next must not be negative")
	}
	return validateFailure(c.FailStatus, c.RetryAfterS)
}

// validateFailure checks the settings both fakes take for their failures.
func validateFailure(failStatus, retryAfterS int) error {
	if failStatus != 0 && (failStatus < 400 || failStatus > 599) {
		return badRequest("fail_status must be an HTTP error status, 400 to 599, got %d", failStatus)
	}
	if retryAfterS < 0 || retryAfterS > maxRetryAfterS {
		return badRequest("retry_after_s must be 0 to %d seconds, got %d", maxRetryAfterS, retryAfterS)
	}
	return nil
}

// injectedFailure is the answer to a request a fake was told to fail
// (fail_next): writeError answers it with its status and, when set, its
// Retry-After.
type injectedFailure struct {
	status      int // 400 to 599
	retryAfterS int // 0: no Retry-After header
}

func (f injectedFailure) Error() string {
	return fmt.Sprintf("provider told to fail this request with %d (control fail_next)", f.status)
}

// takeFailure uses up one of the *failNext failures still to come and
// returns it, or returns nil when none is left. The caller holds the lock.
func takeFailure(failNext *int, status, retryAfterS int) error {
	if *failNext <= 0 {
		return nil
	}
	*failNext--
	return injectedFailure{status: cmp.Or(status, http.StatusServiceUnavailable), retryAfterS: retryAfterS}
}

// SetControl replaces the gateway's settings with c (fields left out are
// zero). It returns an error for negative values, a fail_status that is
// not 400 to 599 and a retry_after_s over an hour.
func (g *Gateway) SetControl(c GatewayControl) error {
	if err := c.validate(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.control = c
	return nil
}

// Control returns the gateway's current settings; FailNext counts down as
// requests fail.
func (g *Gateway) Control() GatewayControl {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.control
}

// admit is the first thing POST /charges and POST /refunds do: it consumes
// one fail_next of the gateway's (one count for both endpoints) and returns
// its failure, or returns how long to sleep before answering.
func (g *Gateway) admit() (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := takeFailure(&g.control.FailNext, g.control.FailStatus, g.control.RetryAfterS); err != nil {
		return 0, err
	}
	return time.Duration(g.control.DelayMS) * time.Millisecond, nil
}

// SetControl replaces the notifier's settings with c (fields left out are
// zero). It returns an error for negative values, a fail_status that is
// not 400 to 599 and a retry_after_s over an hour.
func (n *Notifier) SetControl(c NotifierControl) error {
	if err := c.validate(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.control = c
	return nil
}

// Control returns the notifier's current settings.
func (n *Notifier) Control() NotifierControl {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.control
}

// admit consumes one fail_next, or returns how long to sleep before answering.
func (n *Notifier) admit() (time.Duration, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := takeFailure(&n.control.FailNext, n.control.FailStatus, n.control.RetryAfterS); err != nil {
		return 0, err
	}
	return time.Duration(n.control.DelayMS) * time.Millisecond, nil
}

// handleSetGatewayControl serves POST /control/gateway.
func (g *Gateway) handleSetGatewayControl(w http.ResponseWriter, r *http.Request) {
	var c GatewayControl
	if err := decodeStrict(w, r, &c); err != nil {
		writeError(w, err)
		return
	}
	if err := g.SetControl(c); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, g.Control())
}

// handleGetGatewayControl serves GET /control/gateway.
func (g *Gateway) handleGetGatewayControl(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, g.Control())
}

// handleSetNotifierControl serves POST /control/notifications.
func (n *Notifier) handleSetNotifierControl(w http.ResponseWriter, r *http.Request) {
	var c NotifierControl
	if err := decodeStrict(w, r, &c); err != nil {
		writeError(w, err)
		return
	}
	if err := n.SetControl(c); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, n.Control())
}

// handleGetNotifierControl serves GET /control/notifications.
func (n *Notifier) handleGetNotifierControl(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, n.Control())
}
