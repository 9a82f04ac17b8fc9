// Package notify is the client of the external notification provider: the
// one effect in the flow that cannot be undone (an e-mail, once sent, is sent).
//
// Every call carries an Idempotency-Key. The provider remembers the keys it
// has seen and answers a repeated key from its store without sending again,
// so a retry after a crash, a timeout or a redelivery is harmless as long as
// it reuses the key.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// ErrRejected means the provider refused the request for good (4xx): sending
// it again will not help.
var ErrRejected = errors.New("notification rejected by the provider")

// Client calls the provider's POST /notifications.
type Client struct {
	baseURL string
	http    *http.Client
}

// NewClient returns a client for the provider at baseURL. A nil hc gets a
// client with a 10s timeout.
func NewClient(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{baseURL: baseURL, http: hc}
}

// Sent is the provider's answer.
type Sent struct {
	// ID is the provider's notification id.
	ID string
	// Replayed is true when the provider had already sent a notification for
	// this key and answered from its store: nothing was sent this time.
	Replayed bool
	// Key is the Idempotency-Key this call carried.
	Key string
}

// SendOrderConfirmed asks the provider to send the order confirmation, with
// idempotencyKey as its Idempotency-Key. An empty key sends with no key: the
// mistake the scenario "--without provider-key" demonstrates.
func (c *Client) SendOrderConfirmed(ctx context.Context, idempotencyKey string, orderID uuid.UUID) (Sent, error) {
	body, _ := json.Marshal(map[string]string{"order_id": orderID.String(), "template": "order_confirmed"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/notifications", bytes.NewReader(body))
	if err != nil {
		return Sent{}, fmt.Errorf("build notification request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	key := idempotencyKey
	if key == "" {
		key = uuid.NewString() // a fresh key per call protects nothing
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.http.Do(req)
	if err != nil {
		return Sent{}, fmt.Errorf("call notification provider: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return Sent{}, fmt.Errorf("%w: status %d", ErrRejected, resp.StatusCode)
	}
	if resp.StatusCode/100 != 2 {
		return Sent{}, fmt.Errorf("notification provider answered %d", resp.StatusCode)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return Sent{}, fmt.Errorf("decode notification provider answer: %w", err)
	}
	return Sent{ID: out.ID, Replayed: resp.Header.Get("Idempotent-Replayed") == "true", Key: key}, nil
}
