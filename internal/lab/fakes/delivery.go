package fakes

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Webhook delivery defaults (see GatewayConfig).
const (
	defaultRetryBase   = 50 * time.Millisecond
	maxRetryDelay      = 2 * time.Second
	defaultMaxAttempts = 30
	defaultTimeout     = 5 * time.Second
	maxRedeliveries    = 1000
)

// Types of the webhooks the gateway sends.
const (
	// EventPaymentSucceeded is sent after a charge.
	EventPaymentSucceeded = "payment.succeeded"
	// EventPaymentRefunded is sent after a refund.
	EventPaymentRefunded = "payment.refunded"
)

// Event is a webhook event as the gateway sends it. Its ID is what the
// receiver deduplicates on: a redelivery repeats it.
type Event struct {
	ID   string    `json:"id"`
	Type string    `json:"type"`
	Data EventData `json:"data"`
}

// EventData is the payload of a payment event: the order and the amount
// charged or refunded. ChargeID is set in payment.succeeded only; a
// payment.refunded carries order_id and amount_cents, as the contract says.
type EventData struct {
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
	ChargeID    string `json:"charge_id,omitempty"`
}

// DeliveryAttempt records one POST of an event to the webhook URL: the HTTP
// status it got, or the transport error.
type DeliveryAttempt struct {
	EventID    string    `json:"event_id"`
	Attempt    int       `json:"attempt"` // 1 for the first try of a delivery
	StatusCode int       `json:"status_code,omitempty"`
	Error      string    `json:"error,omitempty"`
	At         time.Time `json:"at"`
}

// paymentSucceeded returns a fresh event announcing c.
func paymentSucceeded(c Charge) Event {
	return Event{
		ID:   newID("evt_"),
		Type: EventPaymentSucceeded,
		Data: EventData{OrderID: c.OrderID, AmountCents: c.AmountCents, ChargeID: c.ID},
	}
}

// paymentRefunded returns a fresh event announcing r.
func paymentRefunded(r Refund) Event {
	return Event{
		ID:   newID("evt_"),
		Type: EventPaymentRefunded,
		Data: EventData{OrderID: r.OrderID, AmountCents: r.AmountCents},
	}
}

// deliverer sends webhooks at least once: each delivery is retried with
// exponential backoff until a 2xx answer or maxAttempts.
type deliverer struct {
	url         string
	secret      []byte
	client      *http.Client
	retryBase   time.Duration
	maxAttempts int

	stop   context.Context // cancelled by close: abandons pending deliveries
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	pending  int           // deliveries started and not finished
	idle     chan struct{} // closed whenever pending is 0
	attempts []DeliveryAttempt
}

func newDeliverer(cfg GatewayConfig) *deliverer {
	stop, cancel := context.WithCancel(context.Background())
	idle := make(chan struct{})
	close(idle)
	d := &deliverer{
		url:         cfg.WebhookURL,
		secret:      cfg.WebhookSecret,
		client:      cfg.Client,
		retryBase:   cmp.Or(max(cfg.RetryBase, 0), defaultRetryBase),
		maxAttempts: cmp.Or(max(cfg.MaxAttempts, 0), defaultMaxAttempts),
		stop:        stop,
		cancel:      cancel,
		idle:        idle,
	}
	if d.client == nil {
		d.client = &http.Client{Timeout: defaultTimeout}
	}
	return d
}

// startWhen delivers events one after the other, once released reports
// true (it is asked every 20ms).
func (d *deliverer) startWhen(released func() bool, events []Event) {
	if !d.reserve(1) {
		return
	}
	go func() {
		defer d.finish()
		for !released() {
			select {
			case <-time.After(20 * time.Millisecond):
			case <-d.stop.Done():
				return
			}
		}
		for _, ev := range events {
			d.deliver(ev)
		}
	}()
}

// start delivers events in the background: one after the other, or, when
// concurrent, each in its own goroutine, all released at the same moment.
// It does nothing without a webhook URL or after close.
func (d *deliverer) start(events []Event, concurrent bool) {
	jobs := min(len(events), 1)
	if concurrent {
		jobs = len(events)
	}
	if !d.reserve(jobs) {
		return
	}
	if !concurrent {
		go func() {
			defer d.finish()
			for _, ev := range events {
				d.deliver(ev)
			}
		}()
		return
	}
	var ready sync.WaitGroup
	release := make(chan struct{})
	for _, ev := range events {
		ready.Add(1)
		go func() {
			defer d.finish()
			ready.Done()
			<-release
			d.deliver(ev)
		}()
	}
	ready.Wait()
	close(release)
}

// reserve counts jobs as pending before their goroutines start, so that
// WaitDelivered called right after a charge's or a refund's answer waits for
// its webhook.
func (d *deliverer) reserve(jobs int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.url == "" || jobs == 0 {
		return false
	}
	if d.pending == 0 {
		d.idle = make(chan struct{})
	}
	d.pending += jobs
	d.wg.Add(jobs)
	return true
}

func (d *deliverer) finish() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending--
	if d.pending == 0 {
		close(d.idle)
	}
	d.wg.Done()
}

// deliver POSTs ev until it gets a 2xx, runs out of attempts or is stopped.
// Every attempt is signed afresh, as the signature's timestamp must be recent.
func (d *deliverer) deliver(ev Event) {
	body, err := json.Marshal(ev)
	if err != nil {
		d.record(ev.ID, 1, 0, fmt.Errorf("encode event: %w", err))
		return
	}
	delay := d.retryBase
	for attempt := 1; attempt <= d.maxAttempts && d.stop.Err() == nil; attempt++ {
		status, err := d.post(body)
		d.record(ev.ID, attempt, status, err)
		if err == nil && status >= 200 && status < 300 {
			return
		}
		if attempt == d.maxAttempts {
			return
		}
		sleep(d.stop, delay)
		delay = min(delay*2, maxRetryDelay)
	}
}

func (d *deliverer) post(body []byte) (int, error) {
	req, err := http.NewRequestWithContext(d.stop, http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(d.secret, time.Now(), body))
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyBytes)) // lets the connection be reused
	return resp.StatusCode, nil
}

func (d *deliverer) record(eventID string, attempt, status int, err error) {
	a := DeliveryAttempt{EventID: eventID, Attempt: attempt, StatusCode: status, At: time.Now().UTC()}
	if err != nil {
		a.Error = err.Error()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.attempts = append(d.attempts, a)
}

// wait returns when no delivery is pending, or with ctx's error.
func (d *deliverer) wait(ctx context.Context) error {
	d.mu.Lock()
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for webhook deliveries: %w", context.Cause(ctx))
	}
}

// close refuses new deliveries, abandons pending ones and waits for their
// goroutines to return.
func (d *deliverer) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}
