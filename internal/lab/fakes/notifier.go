package fakes

import (
	"encoding/json"
	"fmt"
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

// Notifier is the fake notification provider. It sends at most once per
// Idempotency-Key. Create it with NewNotifier.
type Notifier struct {
	mu      sync.Mutex
	control NotifierControl
	sent    []Notification            // in sending order
	byKey   map[string]storedResponse // Idempotency-Key -> the answer given
}

// NewNotifier returns a notifier that has sent nothing.
func NewNotifier() *Notifier {
	return &Notifier{byKey: make(map[string]storedResponse)}
}

// Notifications returns a snapshot of the notifications actually sent, in
// sending order.
func (n *Notifier) Notifications() []Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append(make([]Notification, 0, len(n.sent)), n.sent...)
}

// handleSend serves POST /notifications.
func (n *Notifier) handleSend(w http.ResponseWriter, r *http.Request) {
	delay, err := n.admit()
	if err != nil {
		writeError(w, err)
		return
	}
	key := r.Header.Get(IdempotencyKeyHeader)
	if key == "" {
		writeError(w, errMissingKey)
		return
	}
	var req notifyRequest
	if err := decodeStrict(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.OrderID == "" {
		writeError(w, badRequest("order_id is required"))
		return
	}
	resp, replayed, err := n.send(key, req)
	if err != nil {
		writeError(w, err)
		return
	}
	sleep(r.Context(), delay) // the message is out; a slow answer is a timeout after the effect
	resp.write(w, replayed)
}

// send sends the notification for key unless the key was seen before, in
// which case it returns the stored answer (replayed) or errKeyReused. Look-up
// and send happen under one lock, so concurrent requests with one key send
// exactly once.
func (n *Notifier) send(key string, req notifyRequest) (resp storedResponse, replayed bool, err error) {
	fp, err := fingerprint(req)
	if err != nil {
		return storedResponse{}, false, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if stored, ok := n.byKey[key]; ok {
		resp, err := stored.replay(fp)
		return resp, err == nil, err
	}
	sent := Notification{
		ID:             newID("ntf_"),
		IdempotencyKey: key,
		OrderID:        req.OrderID,
		Template:       req.Template,
		SentAt:         time.Now().UTC(),
	}
	body, err := json.Marshal(sent)
	if err != nil {
		return storedResponse{}, false, fmt.Errorf("encode notification: %w", err)
	}
	resp = storedResponse{fingerprint: fp, status: http.StatusCreated, body: body}
	n.byKey[key] = resp
	n.sent = append(n.sent, sent)
	return resp, false, nil
}

// handleList serves GET /notifications.
func (n *Notifier) handleList(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, n.Notifications())
}
