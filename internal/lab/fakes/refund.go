package fakes

import (
	"cmp"
	"fmt"
	"net/http"
	"time"
)

// Refund is money the fake gateway actually gave back: in the real world, a
// transfer to the customer that, like the charge, cannot be undone.
type Refund struct {
	ID             string    `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"`
	ChargeID       string    `json:"charge_id"`
	OrderID        string    `json:"order_id"` // the charge's
	AmountCents    int64     `json:"amount_cents"`
	CreatedAt      time.Time `json:"created_at"`
}

// refundRequest is the body of POST /refunds. Real gateways refund a charge,
// so the charge id names what is refunded; the order comes from the charge.
type refundRequest struct {
	ChargeID    string `json:"charge_id"`
	AmountCents int64  `json:"amount_cents"`
}

func (r refundRequest) validate() error {
	if r.ChargeID == "" {
		return badRequest("charge_id is required")
	}
	if r.AmountCents <= 0 {
		return badRequest("amount_cents must be greater than 0, got %d", r.AmountCents)
	}
	return nil
}

// RefundRefusal is a refund the fake gateway refused for good (control
// refuse_refunds_of): it was asked, it answered Status, and no money moved.
type RefundRefusal struct {
	IdempotencyKey string    `json:"idempotency_key"`
	ChargeID       string    `json:"charge_id"`
	OrderID        string    `json:"order_id"` // the charge's
	AmountCents    int64     `json:"amount_cents"`
	Status         int       `json:"status"`
	CreatedAt      time.Time `json:"created_at"`
}

// refundRefused is the answer to a refund the gateway was told to refuse
// for good; writeError answers it with its status.
type refundRefused struct {
	status  int // 400 to 499
	orderID string
}

func (e refundRefused) Error() string {
	return fmt.Sprintf("the charge of order %s cannot be refunded (control refuse_refunds_of)", e.orderID)
}

// Refusals returns a snapshot of the refunds refused for good, in the order
// they were asked.
func (g *Gateway) Refusals() []RefundRefusal {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append(make([]RefundRefusal, 0, len(g.refusals)), g.refusals...)
}

// Refunds returns a snapshot of the refunds actually made, in creation order.
func (g *Gateway) Refunds() []Refund {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append(make([]Refund, 0, len(g.refunds)), g.refunds...)
}

// handleCreateRefund serves POST /refunds. It takes the same fail_next and
// delay_ms as POST /charges (see admit); once the money has moved back, a
// slow answer is a client timeout after the effect.
func (g *Gateway) handleCreateRefund(w http.ResponseWriter, r *http.Request) {
	serveOnce(w, r, g.admit, g.refund)
}

// refund gives back req's money for key unless the key was seen before, in
// which case it returns the stored answer (replayed) or errKeyReused. A key
// is new money asked back, so it refunds only what is left of the charge:
// the same money asked again under another key is refused with errRefunded
// (409), as a second refund of it must not happen. A charge of the order
// the gateway is told to refuse (refuse_refunds_of) is refused for good,
// and the refusal recorded. The look-up, the checks, the refund and the
// stored answer happen under one lock: of any number of racing requests
// for the same money, exactly one refunds it.
func (g *Gateway) refund(key string, req refundRequest) (resp storedResponse, replayed bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byKey.once(key, req, func() (any, error) {
		c, ok := g.charged[req.ChargeID]
		if !ok {
			return nil, fmt.Errorf("refund: no charge %q: %w", req.ChargeID, errNotFound)
		}
		if c.OrderID == g.control.RefuseRefundsOf {
			status := cmp.Or(g.control.RefuseStatus, http.StatusPaymentRequired)
			g.refusals = append(g.refusals, RefundRefusal{
				IdempotencyKey: key, ChargeID: c.ID, OrderID: c.OrderID, AmountCents: req.AmountCents,
				Status: status, CreatedAt: time.Now().UTC(),
			})
			return nil, refundRefused{status: status, orderID: c.OrderID}
		}
		if req.AmountCents > c.AmountCents {
			return nil, badRequest("amount_cents %d is more than the %d cents of charge %s", req.AmountCents, c.AmountCents, c.ID)
		}
		if left := c.AmountCents - g.refunded[c.ID]; req.AmountCents > left {
			return nil, fmt.Errorf("%w: %d of the %d cents of charge %s are refunded, %d left, %d asked",
				errRefunded, g.refunded[c.ID], c.AmountCents, c.ID, left, req.AmountCents)
		}
		rf := Refund{
			ID:             newID("re_"),
			IdempotencyKey: key,
			ChargeID:       c.ID,
			OrderID:        c.OrderID,
			AmountCents:    req.AmountCents,
			CreatedAt:      time.Now().UTC(),
		}
		g.refunds = append(g.refunds, rf)
		g.refunded[c.ID] += rf.AmountCents
		ev := paymentRefunded(rf)
		g.events[rf.ID] = ev // for POST /refunds/{id}/redeliver
		g.emit(ev)
		return rf, nil
	})
}

// handleListRefusals serves GET /refund-refusals.
func (g *Gateway) handleListRefusals(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, g.Refusals())
}
