package payment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// bundle is one test's world: its own database, a fake gateway served over
// real HTTP, and a Service wired to both.
type bundle struct {
	pool   *pgxpool.Pool
	svc    *payment.Service
	gw     *fakes.Gateway
	url    string
	client *payment.GatewayClient
	cfg    payment.Config // svc's
	off    *switches.Set  // the guards off in svc (nil: every guard on)

	mu    sync.Mutex
	calls map[string]int // order id -> POST /charges requests that reached the gateway
}

// setup builds a bundle whose Service uses cfg, every guard on and no fault
// points.
func setup(t *testing.T, cfg payment.Config) *bundle {
	t.Helper()
	return setupWithout(t, cfg, nil)
}

// setupWithout builds a bundle whose Service uses cfg, with the guards of
// off switched off (switches.Payments; nil: every guard on).
func setupWithout(t *testing.T, cfg payment.Config, off *switches.Set) *bundle {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	g := fakes.NewGateway(fakes.GatewayConfig{}) // no WebhookURL: no webhooks
	t.Cleanup(g.Close)
	b := &bundle{pool: pool, gw: g, calls: map[string]int{}}
	srv := httptest.NewServer(b.counting(fakes.New(g, fakes.NewNotifier())))
	t.Cleanup(srv.Close)
	b.url = srv.URL
	b.client = payment.NewGatewayClient(srv.URL, srv.Client())
	b.cfg, b.off = cfg, off
	b.svc = b.service(cfg, off)
	return b
}

// svcGuarded reports whether b.svc runs with the per-order charge claim.
func (b *bundle) svcGuarded() bool { return !b.off.Off(effect.GuardChargeClaim) }

// audit reads the order's audit, the query behind GET /orders/{id}/audit.
func (b *bundle) audit(t *testing.T, o queries.Order) queries.AuditOrderRow {
	t.Helper()
	a, err := queries.New(b.pool).AuditOrder(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// service returns another Service on the same database and gateway, with
// the guards of off switched off.
func (b *bundle) service(cfg payment.Config, off *switches.Set) *payment.Service {
	return switches.Payments(payment.NewService(b.pool, b.client, cfg), off)
}

// counting counts the charge requests that reach the gateway, per order: the
// number of times our code called it, replays included.
func (b *bundle) counting(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/charges" {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req payment.ChargeRequest
			_ = json.Unmarshal(body, &req)
			b.mu.Lock()
			b.calls[req.OrderID]++
			b.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// gatewayCalls is how many charge requests for the order reached the gateway.
func (b *bundle) gatewayCalls(o queries.Order) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[o.ID.String()]
}

// charges is the charges the gateway actually made for the order.
func (b *bundle) charges(o queries.Order) []fakes.Charge {
	var out []fakes.Charge
	for _, c := range b.gw.Charges() {
		if c.OrderID == o.ID.String() {
			out = append(out, c)
		}
	}
	return out
}

// newOrder creates a pending order of 100.00 BRL for customer.
func (b *bundle) newOrder(t *testing.T, customer string) queries.Order {
	t.Helper()
	o, err := order.Create(context.Background(), queries.New(b.pool), order.NewOrder{
		CustomerID: customer, AmountCents: 10000, Currency: "BRL",
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// control sets the fake gateway's misbehaviour over HTTP, the documented way.
func (b *bundle) control(t *testing.T, c fakes.GatewayControl) {
	t.Helper()
	body, _ := json.Marshal(c)
	resp, err := http.Post(b.url+"/control/gateway", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /control/gateway: %d", resp.StatusCode)
	}
}

// keyRow reads the stored key, failing the test if there is none.
func (b *bundle) keyRow(t *testing.T, scope, key string) queries.IdempotencyKeyGetRow {
	t.Helper()
	row, err := queries.New(b.pool).IdempotencyKeyGet(context.Background(), queries.IdempotencyKeyGetParams{Scope: scope, Key: key})
	if err != nil {
		t.Fatalf("read key %s/%s: %v", scope, key, err)
	}
	return row
}

// chargeRow reads the order's charge, failing the test if there is none.
func (b *bundle) chargeRow(t *testing.T, o queries.Order) queries.OrderChargeGetRow {
	t.Helper()
	ch, err := queries.New(b.pool).OrderChargeGet(context.Background(), o.ID)
	if err != nil {
		t.Fatalf("read the charge of order %s: %v", o.ID, err)
	}
	return ch
}

// keyCount is how many keys are stored for the order.
func (b *bundle) keyCount(t *testing.T, orderID uuid.UUID) int {
	t.Helper()
	var n int
	err := b.pool.QueryRow(context.Background(), "SELECT count(*) FROM idempotency_keys WHERE order_id = $1", orderID).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// pay calls Pay with a fresh context.
func pay(svc *payment.Service, o queries.Order, key, body string) (payment.Response, error) {
	return svc.Pay(context.Background(), payment.Request{OrderID: o.ID, Key: key, Body: []byte(body)})
}

// mustCharge pays and checks that this call charged: 201, not replayed.
func mustCharge(t *testing.T, svc *payment.Service, o queries.Order, key string) payment.Response {
	t.Helper()
	resp, err := pay(svc, o, key, "")
	if err != nil {
		t.Fatalf("pay: %v", err)
	}
	if resp.Status != http.StatusCreated || resp.Replayed {
		t.Fatalf("pay = %d replayed=%v %s, want 201 not replayed", resp.Status, resp.Replayed, resp.Body)
	}
	return resp
}

// charged is the 201 body.
type charged struct {
	OrderID string       `json:"order_id"`
	Status  string       `json:"status"`
	Charge  fakes.Charge `json:"charge"`
}

func decodeCharged(t *testing.T, body []byte) charged {
	t.Helper()
	var c charged
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("decode 201 body %s: %v", body, err)
	}
	return c
}
