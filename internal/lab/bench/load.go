package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Order is one pending order the load pays.
type Order struct {
	ID          uuid.UUID
	AmountCents int64
}

// Delivery is one webhook delivery: the provider's event EventID saying that
// Order was paid. Two deliveries with one EventID are a provider redelivery;
// two event ids for one order are two events for one payment.
type Delivery struct {
	Order   Order
	EventID string
	// Type is the event's type; "" is payment.succeeded.
	Type string
}

// LoadConfig says how to deliver the webhooks.
type LoadConfig struct {
	// API is the api's base URL; Secret signs each delivery.
	API    string
	Secret []byte
	// Senders is the number of concurrent senders (default 16).
	Senders int
	// Rate is the total deliveries per second; 0 sends as fast as the api
	// accepts them.
	Rate float64
}

// LoadResult is what the provider saw of its deliveries.
type LoadResult struct {
	// Start is when the first delivery was sent, End when the last was accepted.
	Start, End time.Time
	// Accepted is when each order's first delivery got its 2xx.
	Accepted map[uuid.UUID]time.Time
	// Retries counts deliveries repeated after a refusal or a network error.
	Retries int64
}

// Send delivers every webhook, retrying each one until it gets a 2xx, as a
// payment provider does (a restarting api or database refuses for a while).
// It returns when all are accepted or ctx ends.
func Send(ctx context.Context, cfg LoadConfig, deliveries []Delivery) (LoadResult, error) {
	senders := cmp.Or(cfg.Senders, 16)
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: senders, MaxConnsPerHost: senders},
	}
	defer client.CloseIdleConnections()
	res := LoadResult{Start: time.Now(), Accepted: make(map[uuid.UUID]time.Time, len(deliveries))}
	var mu sync.Mutex
	var next, retries atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, senders)
	for range senders {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(deliveries) || ctx.Err() != nil {
					return
				}
				if cfg.Rate > 0 {
					sleepUntil(ctx, res.Start.Add(time.Duration(float64(i)/cfg.Rate*float64(time.Second))))
				}
				d := deliveries[i]
				n, err := deliver(ctx, client, cfg, d)
				retries.Add(int64(n))
				if err != nil {
					errc <- err
					return
				}
				now := time.Now()
				mu.Lock()
				if _, seen := res.Accepted[d.Order.ID]; !seen {
					res.Accepted[d.Order.ID] = now
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.End, res.Retries = time.Now(), retries.Load()
	select {
	case err := <-errc:
		return res, err
	default:
	}
	return res, ctx.Err()
}

// deliver posts one signed webhook until it is accepted and returns how many
// attempts were refused. A 4xx other than 429 is a bug in the load (wrong
// secret, unknown order) and ends the run, and so do two minutes of refusals.
func deliver(ctx context.Context, client *http.Client, cfg LoadConfig, d Delivery) (int, error) {
	body, err := json.Marshal(map[string]any{
		"id": d.EventID, "type": cmp.Or(d.Type, webhook.EventPaymentSucceeded),
		"data": map[string]any{"order_id": d.Order.ID, "amount_cents": d.Order.AmountCents},
	})
	if err != nil {
		return 0, fmt.Errorf("encode webhook: %w", err)
	}
	backoff := 50 * time.Millisecond
	giveUp := time.Now().Add(2 * time.Minute)
	last := ""
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.API+"/webhooks/payments", bytes.NewReader(body))
		if err != nil {
			return attempt, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(cfg.Secret, time.Now(), body))
		resp, err := client.Do(req)
		if err == nil {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			switch {
			case resp.StatusCode < 300:
				return attempt, nil
			case resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
				return attempt, fmt.Errorf("webhook %s refused with %s: %s", d.EventID, resp.Status, msg)
			}
			last = fmt.Sprintf("%s: %s", resp.Status, msg)
		} else {
			last = err.Error()
		}
		if ctx.Err() != nil {
			return attempt, ctx.Err()
		}
		if time.Now().After(giveUp) {
			return attempt, fmt.Errorf("webhook %s refused for two minutes (is the api up? see its log); last answer: %s", d.EventID, last)
		}
		sleepUntil(ctx, time.Now().Add(backoff))
		backoff = min(2*backoff, 2*time.Second)
	}
}

func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// Deliveries gives each order one webhook with a fresh event id.
func Deliveries(orders []Order, runID string) []Delivery {
	out := make([]Delivery, len(orders))
	for i, o := range orders {
		out[i] = Delivery{Order: o, EventID: fmt.Sprintf("evt_%s_%d", runID, i)}
	}
	return out
}
