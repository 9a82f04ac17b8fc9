package fakes

import (
	"net/http"
	"time"
)

// GatewayControl is the misbehaviour the fake gateway is told to show, for
// scenarios and tests. The zero value is a well-behaved gateway.
type GatewayControl struct {
	// FailNext: the next FailNext POST /charges answer 503 without charging
	// (a provider outage; the caller must retry with the same key).
	FailNext int `json:"fail_next"`
	// DelayMS: every POST /charges sleeps this long before answering, after
	// charging (the caller times out although the money moved).
	DelayMS int `json:"delay_ms"`
	// DuplicateWebhooks: each new charge's webhook is delivered
	// 1+DuplicateWebhooks times, one after the other, with the same event id.
	DuplicateWebhooks int `json:"duplicate_webhooks"`
}

func (c GatewayControl) validate() error {
	if c.FailNext < 0 || c.DelayMS < 0 || c.DuplicateWebhooks < 0 {
		return badRequest("fail_next, delay_ms and duplicate_webhooks must not be negative")
	}
	if c.DuplicateWebhooks > maxRedeliveries {
		return badRequest("duplicate_webhooks must be at most %d", maxRedeliveries)
	}
	return nil
}

// NotifierControl is the misbehaviour the fake notification provider is told
// to show. The zero value is a well-behaved provider.
type NotifierControl struct {
	// FailNext: the next FailNext POST /notifications answer 503 without
	// sending anything.
	FailNext int `json:"fail_next"`
	// DelayMS: every POST /notifications sleeps this long before answering,
	// after sending (the caller times out although the e-mail is out).
	DelayMS int `json:"delay_ms"`
}

func (c NotifierControl) validate() error {
	if c.FailNext < 0 || c.DelayMS < 0 {
		return badRequest("fail_next and delay_ms must not be negative")
	}
	return nil
}

// SetControl replaces the gateway's settings with c (fields left out are
// zero). It returns an error for negative values.
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

// admit is the first thing POST /charges does: it consumes one fail_next, or
// returns how long to sleep before answering.
func (g *Gateway) admit() (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.control.FailNext > 0 {
		g.control.FailNext--
		return 0, errUnavailable
	}
	return time.Duration(g.control.DelayMS) * time.Millisecond, nil
}

// SetControl replaces the notifier's settings with c (fields left out are
// zero). It returns an error for negative values.
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
	if n.control.FailNext > 0 {
		n.control.FailNext--
		return 0, errUnavailable
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
