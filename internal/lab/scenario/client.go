package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
)

// call sends one JSON request and decodes a 2xx answer into out (if not
// nil). It returns the status; err is for requests that got no answer.
func (s *Stage) call(ctx context.Context, method, url string, headers map[string]string, body, out any) (int, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if out != nil && resp.StatusCode/100 == 2 && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode %q: %w", method, url, raw, err)
		}
	}
	return resp.StatusCode, nil
}

// must is call for requests that must answer 2xx.
func (s *Stage) must(ctx context.Context, method, url string, body, out any) error {
	status, err := s.call(ctx, method, url, nil, body, out)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if status/100 != 2 {
		return fmt.Errorf("%s %s: status %d", method, url, status)
	}
	return nil
}

// NewOrder creates a pending order of 100.00 BRL with an affiliate through
// POST /orders, and tracks it. items, if any, are {"sku","quantity"} objects.
func (s *Stage) NewOrder(ctx context.Context, items ...map[string]any) (uuid.UUID, error) {
	var created struct {
		ID uuid.UUID `json:"id"`
	}
	body := map[string]any{"customer_id": "c1", "affiliate_id": "a1", "amount_cents": 10000, "currency": "BRL"}
	if len(items) > 0 {
		body["items"] = items
	}
	err := s.must(ctx, "POST", s.APIURL()+"/orders", body, &created)
	if err != nil {
		return uuid.Nil, err
	}
	s.Track(created.ID)
	return created.ID, nil
}

// Pay sends POST /orders/{id}/payments with key as its Idempotency-Key and
// gives up after timeout, as an impatient client does. err is set when no
// answer came back in time.
func (s *Stage) Pay(ctx context.Context, id uuid.UUID, key string, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.call(ctx, "POST", s.APIURL()+"/orders/"+id.String()+"/payments", map[string]string{"Idempotency-Key": key}, map[string]any{}, nil)
}

// PayTitle is Pay that also returns the title of a problem answer, such as
// "Order already paid", for a client that reads why it was refused.
func (s *Stage) PayTitle(ctx context.Context, id uuid.UUID, key string, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.APIURL()+"/orders/"+id.String()+"/payments", strings.NewReader("{}"))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var p struct {
		Title string `json:"title"`
	}
	if resp.StatusCode >= 400 {
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&p)
	}
	return resp.StatusCode, p.Title, nil
}

// SetStock sets sku's stock to available with PUT /stock/{sku}.
func (s *Stage) SetStock(ctx context.Context, sku string, available int) error {
	return s.must(ctx, "PUT", s.APIURL()+"/stock/"+sku, map[string]any{"available": available}, nil)
}

// Stock reads sku's available units with GET /stock/{sku}.
func (s *Stage) Stock(ctx context.Context, sku string) (int64, error) {
	var level struct {
		Available int64 `json:"available"`
	}
	return level.Available, s.must(ctx, "GET", s.APIURL()+"/stock/"+sku, nil, &level)
}

// PaidOrder creates an order (with items, if any) and pays it; the gateway's
// webhook then starts the order_paid flow. It returns the order and the
// gateway's charge id.
func (s *Stage) PaidOrder(ctx context.Context, items ...map[string]any) (uuid.UUID, string, error) {
	id, err := s.NewOrder(ctx, items...)
	if err != nil {
		return uuid.Nil, "", err
	}
	status, err := s.Pay(ctx, id, "pay-"+id.String(), 10*time.Second)
	if err != nil || status != http.StatusCreated {
		return uuid.Nil, "", fmt.Errorf("pay order %s: status %d, %v", id, status, err)
	}
	charges, err := s.charges(ctx)
	if err != nil {
		return uuid.Nil, "", err
	}
	for _, c := range charges {
		if c.OrderID == id.String() {
			s.Logf("order %s paid: charge %s", id, c.ID)
			return id, c.ID, nil
		}
	}
	return uuid.Nil, "", fmt.Errorf("the gateway answered 201 for order %s but lists no charge for it", id)
}

// charge and notification are the fakes' records of real effects.
type charge struct {
	ID      string `json:"id"`
	OrderID string `json:"order_id"`
}

type notification struct {
	OrderID  string `json:"order_id"`
	Template string `json:"template"`
}

type refundRecord struct {
	ID      string `json:"id"`
	OrderID string `json:"order_id"`
}

func (s *Stage) refunds(ctx context.Context) ([]refundRecord, error) {
	var rs []refundRecord
	return rs, s.must(ctx, "GET", s.FakesURL()+"/refunds", nil, &rs)
}

func (s *Stage) charges(ctx context.Context) ([]charge, error) {
	var cs []charge
	return cs, s.must(ctx, "GET", s.FakesURL()+"/charges", nil, &cs)
}

// ChargeIDs are the ids of the charges the fake gateway made.
func (s *Stage) ChargeIDs(ctx context.Context) ([]string, error) {
	cs, err := s.charges(ctx)
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids, err
}

func (s *Stage) notifications(ctx context.Context) ([]notification, error) {
	var ns []notification
	return ns, s.must(ctx, "GET", s.FakesURL()+"/notifications", nil, &ns)
}

// GatewayControl replaces the fake gateway's misbehaviour settings
// (fail_next, delay_ms, duplicate_webhooks).
func (s *Stage) GatewayControl(ctx context.Context, settings map[string]int) error {
	s.Logf("gateway control %v", settings)
	return s.must(ctx, "POST", s.FakesURL()+"/control/gateway", settings, nil)
}

// NotifierControl replaces the fake notification provider's settings
// (fail_next, delay_ms).
func (s *Stage) NotifierControl(ctx context.Context, settings map[string]int) error {
	s.Logf("notifier control %v", settings)
	return s.must(ctx, "POST", s.FakesURL()+"/control/notifications", settings, nil)
}

// Redeliver makes the fake gateway deliver a charge's webhook count more
// times: one after the other or all at once, with the original event id or
// a fresh one per delivery.
func (s *Stage) Redeliver(ctx context.Context, chargeID string, count int, concurrent, newEventID bool) error {
	s.Logf("redeliver charge %s: count=%d concurrent=%v new_event_id=%v", chargeID, count, concurrent, newEventID)
	return s.must(ctx, "POST", s.FakesURL()+"/charges/"+chargeID+"/redeliver",
		map[string]any{"count": count, "concurrent": concurrent, "new_event_id": newEventID}, nil)
}

// audit is GET /orders/{id}/audit.
type audit struct { // GET /orders/{id}/audit
	Executions map[string]int64 `json:"executions"`
	Effects    map[string]int64 `json:"effects"`
	Reconciled []string         `json:"reconciled"`
}

func (s *Stage) audit(ctx context.Context, id uuid.UUID) (audit, error) {
	var a audit
	return a, s.must(ctx, "GET", s.APIURL()+"/orders/"+id.String()+"/audit", nil, &a)
}
