package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The reconcile soak puts two small proxies in the soak's own process
// between the real ones, to leave the gaps only reconcile closes:
//
//   - webhookLoss, between the fake gateway and the api, answers a share of
//     the payment.succeeded webhooks 200 without passing them on: the
//     provider thinks them delivered, the service never hears of them;
//   - slowGateway, between api and workers and the fakes, makes each POST
//     /charges take a while on its way to the gateway and on its way back,
//     so that an api SIGKILLed meanwhile leaves an attempt the gateway never
//     saw, or a charge made whose answer nobody stored.

// relay is an HTTP server in the soak's process that passes requests on to
// a target set once the stack runs (until then it answers 503).
type relay struct {
	srv    *http.Server
	ln     net.Listener
	target atomic.Pointer[string]
	client *http.Client
}

// listen starts serving h on a free local port.
func (r *relay) listen(h http.Handler) error {
	var err error
	if r.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return fmt.Errorf("listen for a proxy: %w", err)
	}
	r.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	r.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(r.ln) }()
	return nil
}

// URL is the proxy's base URL.
func (r *relay) URL() string { return "http://" + r.ln.Addr().String() }

// to sets the base URL requests are passed on to.
func (r *relay) to(base string) { r.target.Store(&base) }

func (r *relay) close() {
	if r.srv != nil {
		_ = r.srv.Close()
		r.client.CloseIdleConnections()
	}
}

// answer is a response passed back from the target.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// forward sends req (whose body is body) to the target, on ctx, and reads
// the whole answer.
func (r *relay) forward(ctx context.Context, req *http.Request, body []byte) (answer, error) {
	base := r.target.Load()
	if base == nil {
		return answer{}, errors.New("no target yet")
	}
	out, err := http.NewRequestWithContext(ctx, req.Method, *base+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	out.Header = req.Header.Clone()
	resp, err := r.client.Do(out)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, err
}

func (a answer) write(w http.ResponseWriter) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// webhookLoss passes the gateway's webhooks on to the api, except a share
// of the payment.succeeded events, which it answers 200 and drops: they
// never arrive. A webhook it cannot pass on (the api is down) is answered
// 502, so the gateway retries it as it would.
type webhookLoss struct {
	relay
	share float64

	mu sync.Mutex
	// succeeded holds every payment.succeeded the gateway sent, by event
	// id: the events reconcile's own are told apart from.
	succeeded map[string]lostEvent
}

// lostEvent is one payment.succeeded the gateway sent and whether it was
// dropped.
type lostEvent struct {
	OrderID, ChargeID string
	Dropped           bool
}

func newWebhookLoss(share float64) (*webhookLoss, error) {
	p := &webhookLoss{share: share, succeeded: map[string]lostEvent{}}
	return p, p.listen(p)
}

func (p *webhookLoss) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ev struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			OrderID  string `json:"order_id"`
			ChargeID string `json:"charge_id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &ev) == nil && ev.Type == "payment.succeeded" && p.drop(ev.ID, ev.Data.OrderID, ev.Data.ChargeID) {
		w.WriteHeader(http.StatusOK)
		return
	}
	a, err := p.forward(r.Context(), r, body)
	if err != nil {
		http.Error(w, "api unreachable: "+err.Error(), http.StatusBadGateway)
		return
	}
	a.write(w)
}

// drop decides, the first time an event comes, whether it is lost, and
// keeps to it for the gateway's retries.
func (p *webhookLoss) drop(eventID, orderID, chargeID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, seen := p.succeeded[eventID]
	if !seen {
		e = lostEvent{OrderID: orderID, ChargeID: chargeID, Dropped: rand.Float64() < p.share}
		p.succeeded[eventID] = e
	}
	return e.Dropped
}

// events returns every payment.succeeded the gateway sent, by event id.
func (p *webhookLoss) events() map[string]lostEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]lostEvent, len(p.succeeded))
	for id, e := range p.succeeded {
		out[id] = e
	}
	return out
}

// slowGateway passes every request on to the fakes; a POST /charges waits
// delay before it goes on to the gateway and delay again before its answer
// goes back. A caller that hangs up meanwhile (an api SIGKILLed) is
// counted: before, the charge is never sent (cutBefore); after, the charge
// is made and its answer lost (cutAfter).
type slowGateway struct {
	relay
	delay               time.Duration
	cutBefore, cutAfter atomic.Int64
}

func newSlowGateway(delay time.Duration) (*slowGateway, error) {
	p := &slowGateway{delay: delay}
	return p, p.listen(p)
}

func (p *slowGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	charge := r.Method == http.MethodPost && r.URL.Path == "/charges"
	if charge && !wait(r.Context(), p.delay) {
		p.cutBefore.Add(1)
		return
	}
	// Once sent, the charge runs to the end whatever the caller does.
	a, err := p.forward(context.WithoutCancel(r.Context()), r, body)
	if err != nil {
		http.Error(w, "fakes unreachable: "+err.Error(), http.StatusBadGateway)
		return
	}
	if charge && !wait(r.Context(), p.delay) {
		p.cutAfter.Add(1)
		return
	}
	a.write(w)
}

// wait waits d and reports whether ctx was still live at the end.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}
