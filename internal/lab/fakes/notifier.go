package fakes

import (
	"net/http"
	"sync"
	"time"
)

// Notification is one message the fake provider actually sent: in the real
// world, an e-mail in the customer's inbox that no rollback can recall.
type Notification struct {
	ID             string    `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"`
	OrderID        string    `json:"order_id"`
	Template       string    `json:"template"`
	SentAt         time.Time `json:"sent_at"`
}

// notifyRequest is the body of POST /notifications.
type notifyRequest struct {
	OrderID  string `json:"order_id"`
	Template string `json:"template"`
}

func (r notifyRequest) validate() error {
	if r.OrderID == "" {
		return badRequest("order_id is required")
	}
	return nil
}

// Notifier is the fake notification provider. It sends at most once per
// Idempotency-Key. Create it with NewNotifier.
type Notifier struct {
	mu      sync.Mutex
	control NotifierControl
	sent    []Notification // in sending order
	byKey   keyStore       // Idempotency-Key -> the answer given
	// searchLag: look-ups by order leave out what is younger (lookup.go).
	searchLag time.Duration
}

// NewNotifier returns a notifier that has sent nothing.
func NewNotifier() *Notifier {
	return &Notifier{byKey: make(keyStore)}
}

// Notifications returns a snapshot of the notifications actually sent, in
// sending order.
func (n *Notifier) Notifications() []Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append(make([]Notification, 0, len(n.sent)), n.sent...)
}

// handleSend serves POST /notifications. Once the message is out, a slow
// answer is a client timeout after the effect.
func (n *Notifier) handleSend(w http.ResponseWriter, r *http.Request) {
	serveOnce(w, r, n.admit, n.send)
}

// send sends the notification for key unless the key was seen before, in
// which case it returns the stored answer (replayed) or errKeyReused. Look-up
// and send happen under one lock, so concurrent requests with one key send
// exactly once.
func (n *Notifier) send(key string, req notifyRequest) (resp storedResponse, replayed bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byKey.once(key, req, func() (any, error) {
		sent := Notification{
			ID:             newID("ntf_"),
			IdempotencyKey: key,
			OrderID:        req.OrderID,
			Template:       req.Template,
			SentAt:         time.Now().UTC(),
		}
		n.sent = append(n.sent, sent)
		return sent, nil
	})
}

// ForgetKeys forgets every Idempotency-Key the provider has seen, as a real
// provider does once its keys expire (about a day): a call with an old key
// is then a new request. The notifications sent stay sent. It returns how
// many keys it forgot.
func (n *Notifier) ForgetKeys() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byKey.forget()
}

// handleForgetKeys serves POST /control/notifications/forget-keys.
func (n *Notifier) handleForgetKeys(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]int{"forgotten": n.ForgetKeys()})
}
