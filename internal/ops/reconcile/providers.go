package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Providers is what reconcile reads of the outside world: the records kept
// by the payment gateway and by the notification provider. In production
// each is the provider's list or retrieve-by-key API; HTTPProviders reads
// the fakes' (GET /charges, GET /refunds, GET /notifications).
type Providers interface {
	Charges(ctx context.Context) ([]Charge, error)
	Refunds(ctx context.Context) ([]Refund, error)
	Notifications(ctx context.Context) ([]Notification, error)
}

// Charge is a charge as the gateway recorded it.
type Charge struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotency_key"`
	OrderID        string `json:"order_id"`
	AmountCents    int64  `json:"amount_cents"`
}

// Refund is a refund as the gateway recorded it.
type Refund struct {
	ID          string `json:"id"`
	ChargeID    string `json:"charge_id"`
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
}

// Notification is an e-mail as the notification provider recorded it.
type Notification struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotency_key"`
	OrderID        string `json:"order_id"`
	Template       string `json:"template"`
}

// HTTPProviders reads the providers' records over HTTP, both at one base
// URL (FAKES_URL).
type HTTPProviders struct {
	baseURL string
	hc      *http.Client
}

// NewHTTPProviders returns the providers at baseURL; hc nil: a client with
// a 10s timeout.
func NewHTTPProviders(baseURL string, hc *http.Client) *HTTPProviders {
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &HTTPProviders{baseURL: strings.TrimRight(baseURL, "/"), hc: hc}
}

// Charges lists the gateway's charges.
func (p *HTTPProviders) Charges(ctx context.Context) ([]Charge, error) {
	var out []Charge
	return out, p.get(ctx, "/charges", &out)
}

// Refunds lists the gateway's refunds.
func (p *HTTPProviders) Refunds(ctx context.Context) ([]Refund, error) {
	var out []Refund
	return out, p.get(ctx, "/refunds", &out)
}

// Notifications lists the notification provider's e-mails.
func (p *HTTPProviders) Notifications(ctx context.Context) ([]Notification, error) {
	var out []Notification
	return out, p.get(ctx, "/notifications", &out)
}

func (p *HTTPProviders) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.baseURL+path, nil)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return fmt.Errorf("read the providers' records (GET %s%s): %w", p.baseURL, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read GET %s%s: %w", p.baseURL, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s%s answered %d: %.200s", p.baseURL, path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode GET %s%s: %w", p.baseURL, path, err)
	}
	return nil
}
