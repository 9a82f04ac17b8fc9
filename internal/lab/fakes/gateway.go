package fakes

import (
	"net/http"
	"sync"
	"time"
)

// Charge is one payment the fake gateway actually made: in the real world,
// money that has left the customer's account and cannot be taken back by
// deleting a row.
type Charge struct {
	ID             string    `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"`
	OrderID        string    `json:"order_id"`
	AmountCents    int64     `json:"amount_cents"`
	Currency       string    `json:"currency"`
	CreatedAt      time.Time `json:"created_at"`
}

// chargeRequest is the body of POST /charges.
type chargeRequest struct {
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
}

func (r chargeRequest) validate() error {
	if r.OrderID == "" {
		return badRequest("order_id is required")
	}
	if r.AmountCents <= 0 {
		return badRequest("amount_cents must be greater than 0, got %d", r.AmountCents)
	}
	return nil
}

// GatewayConfig configures the fake payment gateway. Zero values take the
// documented defaults.
type GatewayConfig struct {
	WebhookURL    string        // where payment.succeeded and payment.refunded webhooks are delivered; empty: none are sent
	WebhookSecret []byte        // HMAC secret used to sign them
	Client        *http.Client  // nil: a client with a 5s timeout
	RetryBase     time.Duration // first retry delay for webhook delivery, default 50ms, doubles, capped at 2s
	MaxAttempts   int           // delivery attempts per event before giving up, default 30
}

// Gateway is the fake payment gateway. It charges and refunds at most once
// per Idempotency-Key, never refunds the same money twice, and tells the
// merchant about each charge and refund with a signed, retried webhook.
// Create it with NewGateway and stop it with Close.
type Gateway struct {
	delivery *deliverer

	mu       sync.Mutex
	control  GatewayControl
	charges  []Charge          // in creation order
	charged  map[string]Charge // charge id -> the charge, for refunds
	refunds  []Refund          // in creation order
	refunded map[string]int64  // charge id -> the cents refunded of it so far
	refusals []RefundRefusal   // refunds refused for good (refuse_refunds_of), in the order asked
	byKey    keyStore          // Idempotency-Key -> the answer given, charges and refunds alike
	events   map[string]Event  // charge id -> its payment.succeeded, refund id -> its payment.refunded (first emitted)
	// searchLag: look-ups by order leave out what is younger (lookup.go).
	searchLag time.Duration
}

// NewGateway returns a gateway with no charges. Webhook deliveries run in
// background goroutines until Close.
func NewGateway(cfg GatewayConfig) *Gateway {
	return &Gateway{
		delivery: newDeliverer(cfg),
		charged:  make(map[string]Charge),
		refunded: make(map[string]int64),
		byKey:    make(keyStore),
		events:   make(map[string]Event),
	}
}

// Charges returns a snapshot of the charges actually made, in creation order.
func (g *Gateway) Charges() []Charge {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append(make([]Charge, 0, len(g.charges)), g.charges...)
}

// handleCreateCharge serves POST /charges. Once the money has moved, a slow
// answer is a client timeout after the effect.
func (g *Gateway) handleCreateCharge(w http.ResponseWriter, r *http.Request) {
	serveOnce(w, r, g.admit, g.charge)
}

// charge performs the charge for key unless the key was seen before, in
// which case it returns the stored answer (replayed) or errKeyReused. The
// look-up, the charge and the stored answer happen under one lock: however
// many requests race with one key, exactly one charges.
func (g *Gateway) charge(key string, req chargeRequest) (resp storedResponse, replayed bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byKey.once(key, req, func() (any, error) {
		c := Charge{
			ID:             newID("ch_"),
			IdempotencyKey: key,
			OrderID:        req.OrderID,
			AmountCents:    req.AmountCents,
			Currency:       req.Currency,
			CreatedAt:      time.Now().UTC(),
		}
		g.charges = append(g.charges, c)
		g.charged[c.ID] = c
		ev := paymentSucceeded(c)
		g.events[c.ID] = ev
		g.emit(ev)
		return c, nil
	})
}

// emit delivers ev in the background, 1+DuplicateWebhooks times one after
// the other (duplicates repeat the same event id), once the gateway does
// not hold its webhooks (HoldWebhooks). The caller holds g.mu.
func (g *Gateway) emit(ev Event) {
	events := make([]Event, 1+g.control.DuplicateWebhooks)
	for i := range events {
		events[i] = ev
	}
	g.delivery.startWhen(g.released, events)
}

// released reports whether webhooks may go (HoldWebhooks is not set).
func (g *Gateway) released() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.control.HoldWebhooks
}

// ForgetKeys forgets every Idempotency-Key the gateway has seen, charges and
// refunds alike, as a real gateway does once its keys expire (Stripe keeps
// them about 24 hours): a call with an old key is then a new request. The
// charges and refunds made stay made. It returns how many keys it forgot.
func (g *Gateway) ForgetKeys() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byKey.forget()
}

// handleForgetKeys serves POST /control/gateway/forget-keys.
func (g *Gateway) handleForgetKeys(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]int{"forgotten": g.ForgetKeys()})
}
