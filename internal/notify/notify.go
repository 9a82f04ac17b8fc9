// Package notify is the client of the external notification provider: the
// one effect in the flow that cannot be undone (an e-mail, once sent, is sent).
//
// Every call carries an Idempotency-Key. The provider remembers the keys it
// has seen and answers a repeated key from its store without sending again,
// so a retry after a crash, a timeout or a redelivery is harmless as long as
// it reuses the key.
//
// An answer that is not a success is either "no" or "not now". Only a
// refusal (ErrRejected: a 4xx such as 400 or 422) is final. A rate limit
// (429), a timeout, a conflict with an in-flight request, "too early" and a
// 5xx are NotNowError: the caller waits the provider's Retry-After and tries
// again with the same key.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
)

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

// MessageKey is the provider's Idempotency-Key for a message: the message
// id itself. Every delivery and every retry of one message carries the same
// key, so the provider sends its e-mail once however often it is asked.
func MessageKey(messageID string) string { return messageID }

// FreshKey is the mistake MessageKey prevents: a fresh key per call, which
// protects nothing, since the provider sees every retry as a new e-mail.
func FreshKey(string) string { return uuid.NewString() }

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
// idempotencyKey as its Idempotency-Key. An empty key is refused before any
// call: a call without a key protects nothing.
//
// A refusal is ErrRejected; a "not now" answer is a *NotNowError, with the
// provider's Retry-After. Any other error (no answer) is transient too. A
// retry must carry the same key, so that the provider never sends twice.
func (c *Client) SendOrderConfirmed(ctx context.Context, idempotencyKey string, orderID uuid.UUID) (Sent, error) {
	return c.Send(ctx, idempotencyKey, orderID, TemplateOrderConfirmed)
}

// Templates of the provider's messages, as notification_log stores them.
const (
	// TemplateOrderConfirmed: the order is paid and will be fulfilled.
	TemplateOrderConfirmed = "order_confirmed"
	// TemplateOrderRefunded: the order's money was given back.
	TemplateOrderRefunded = "order_refunded"
)

// Send asks the provider to send the customer the message template about
// the order, with idempotencyKey as its Idempotency-Key, with the answers
// of SendOrderConfirmed.
func (c *Client) Send(ctx context.Context, idempotencyKey string, orderID uuid.UUID, template string) (Sent, error) {
	if idempotencyKey == "" {
		return Sent{}, ErrNoKey
	}
	body, _ := json.Marshal(map[string]string{"order_id": orderID.String(), "template": template})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/notifications", bytes.NewReader(body))
	if err != nil {
		return Sent{}, fmt.Errorf("build notification request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idempotencyKey)
	resp, err := c.http.Do(req)
	if err != nil {
		return Sent{}, fmt.Errorf("call notification provider: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case notNow(resp.StatusCode):
		return Sent{}, &NotNowError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case resp.StatusCode >= 400:
		return Sent{}, fmt.Errorf("%w: status %d", ErrRejected, resp.StatusCode)
	case resp.StatusCode/100 != 2:
		return Sent{}, fmt.Errorf("notification provider answered %d", resp.StatusCode)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return Sent{}, fmt.Errorf("decode notification provider answer: %w", err)
	}
	return Sent{ID: out.ID, Replayed: resp.Header.Get("Idempotent-Replayed") == "true", Key: idempotencyKey}, nil
}

// SentFor asks the provider for the notifications it sent about the order
// (GET /notifications?order_id=, a real provider's search by recipient or
// tag) and returns the first of template, if any: what it did, which it
// keeps after it has forgotten the call's key. An error means it could not
// say: nothing may be sent blind then.
func (c *Client) SentFor(ctx context.Context, orderID uuid.UUID, template string) (Sent, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+"/notifications?order_id="+orderID.String(), nil)
	if err != nil {
		return Sent{}, false, fmt.Errorf("build notification look-up: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Sent{}, false, fmt.Errorf("ask the notification provider: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Sent{}, false, fmt.Errorf("ask the notification provider: it answered %d", resp.StatusCode)
	}
	var found []struct {
		ID             string `json:"id"`
		IdempotencyKey string `json:"idempotency_key"`
		Template       string `json:"template"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&found); err != nil {
		return Sent{}, false, fmt.Errorf("decode the notification provider's look-up: %w", err)
	}
	for _, n := range found {
		if n.Template == template {
			return Sent{ID: n.ID, Replayed: true, Key: n.IdempotencyKey}, true, nil
		}
	}
	return Sent{}, false, nil
}
