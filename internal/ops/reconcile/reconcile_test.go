package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/ops/reconcile"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// world is one database and the fake providers, real HTTP servers that send
// no webhooks: what reconcile reads and what it settles.
type world struct {
	t     *testing.T
	pool  *pgxpool.Pool
	fakes string
}

func newWorld(t *testing.T) world {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	gw := fakes.NewGateway(fakes.GatewayConfig{})
	t.Cleanup(gw.Close)
	srv := httptest.NewServer(fakes.New(gw, fakes.NewNotifier()))
	t.Cleanup(srv.Close)
	return world{t: t, pool: pool, fakes: srv.URL}
}

func (w world) reconciler(dryRun bool) *reconcile.Reconciler {
	return reconcile.New(w.pool, reconcile.NewHTTPProviders(w.fakes, nil), webhook.NewIngestor(w.pool, nil),
		reconcile.Config{Grace: time.Minute, DryRun: dryRun})
}

func (w world) run(dryRun bool) reconcile.Report {
	w.t.Helper()
	rep, err := w.reconciler(dryRun).Run(context.Background())
	if err != nil {
		w.t.Fatalf("reconcile: %v", err)
	}
	return rep
}

// order creates a pending order of 10000 cents.
func (w world) order() uuid.UUID {
	w.t.Helper()
	o, err := order.Create(context.Background(), queries.New(w.pool), order.NewOrder{
		CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL",
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return o.ID
}

// exec runs one statement of a test's set-up, or one check, against the
// database.
func (w world) exec(sql string, args ...any) {
	w.t.Helper()
	if _, err := w.pool.Exec(context.Background(), sql, args...); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
}

func (w world) count(sql string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// post calls the fake providers as the service would.
func (w world) post(path, key string, body any) map[string]any {
	w.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, w.fakes+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode/100 != 2 {
		w.t.Fatalf("POST %s = %d %v", path, resp.StatusCode, out)
	}
	return out
}

// chargeLost leaves an order as an api SIGKILLed between the gateway's
// answer and storing it leaves it, with a client that gave up and a webhook
// that never came: the gateway charged under the attempt's key, the attempt
// is charging past its lease, the order pending.
func (w world) chargeLost() (uuid.UUID, string) {
	id := w.order()
	w.exec(`INSERT INTO order_charges (order_id, holder_scope, holder_key, locked_until)
	        VALUES ($1, 'c1', 'k1', now() - interval '1 minute')`, id)
	ch := w.post("/charges", payment.ChargeKey(id, 1), map[string]any{"order_id": id, "amount_cents": 10000, "currency": "BRL"})
	return id, ch["id"].(string)
}

func only(t *testing.T, rep reconcile.Report, kind reconcile.Kind) reconcile.Finding {
	t.Helper()
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != kind {
		t.Fatalf("findings = %+v, want one %s", rep.Findings, kind)
	}
	return rep.Findings[0]
}

func outboxed(w world, id uuid.UUID, topic string) int {
	return w.count(`SELECT count(*) FROM watermill_outbox WHERE order_id = $1 AND payload ->> 'destination_topic' = $2`, id, topic)
}

// TestChargeAnswerLost: the charge is completed from the gateway's record of
// its key (recorded on the order's intent, order_paid enqueued), never
// charged again; a second run settles nothing twice.
func TestChargeAnswerLost(t *testing.T) {
	w := newWorld(t)
	id, chargeID := w.chargeLost()

	if f := only(t, w.run(true), reconcile.ChargeNotApplied); f.Settled {
		t.Fatalf("a dry run settled %+v", f)
	}
	if n := outboxed(w, id, "order_paid"); n != 0 {
		t.Fatalf("a dry run wrote %d order_paid", n)
	}

	rep := w.run(false)
	if f := only(t, rep, reconcile.ChargeNotApplied); !f.Settled || rep.Left() != 0 {
		t.Fatalf("finding %+v, left %d: want settled", f, rep.Left())
	}
	// order_paid is in the outbox and no worker runs here: not done yet.
	if f := rep.Findings[0]; !f.Waiting || rep.ExitStatus() != reconcile.ExitWaiting {
		t.Errorf("waiting %v, exit status %d: want waiting for the worker (%d)", f.Waiting, rep.ExitStatus(), reconcile.ExitWaiting)
	}
	var state, recorded string
	if err := w.pool.QueryRow(context.Background(), `SELECT state, charge_id FROM order_charges WHERE order_id = $1`, id).Scan(&state, &recorded); err != nil {
		t.Fatal(err)
	}
	if state != "charged" || recorded != chargeID {
		t.Errorf("order_charges = %s %s, want charged %s", state, recorded, chargeID)
	}
	w.run(false) // the order is still pending: no consumer runs here
	if n := outboxed(w, id, "order_paid"); n != 1 {
		t.Errorf("order_paid written %d times over two runs, want 1", n)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_actions WHERE order_id = $1 AND action = 'charge_completed'`, id); n != 1 {
		t.Errorf("%d charge_completed actions, want 1", n)
	}
}

// TestChargeNeverMade: an attempt charging past its lease that the gateway
// never saw is given back; nothing is charged, and nothing is left charging.
func TestChargeNeverMade(t *testing.T) {
	w := newWorld(t)
	id := w.order()
	w.exec(`INSERT INTO order_charges (order_id, holder_scope, holder_key, locked_until)
	        VALUES ($1, 'c1', 'k1', now() - interval '1 minute')`, id)

	rep := w.run(false)
	if f := only(t, rep, reconcile.ChargeStuck); !f.Settled || f.Waiting || rep.ExitStatus() != reconcile.ExitDone {
		t.Fatalf("finding %+v, exit status %d: want settled and done (a release hands the worker nothing)", f, rep.ExitStatus())
	}
	if n := w.count(`SELECT count(*) FROM order_charges WHERE order_id = $1 AND state = 'released' AND attempt = 1`, id); n != 1 {
		t.Errorf("the attempt is not released (attempt 1 kept)")
	}
	if rep := w.run(false); len(rep.Findings) != 0 {
		t.Errorf("second run found %+v, want nothing", rep.Findings)
	}

	// The customer pays again, with a new key: the request takes the
	// released attempt over, under its gateway key.
	pay := payment.NewService(w.pool, payment.NewGatewayClient(w.fakes, nil), payment.Config{})
	resp, err := pay.Pay(context.Background(), payment.Request{OrderID: id, Key: "pay-again", Body: []byte(`{}`)})
	if err != nil || resp.Status != http.StatusCreated {
		t.Fatalf("payment after the release = %d %s, %v; want 201", resp.Status, resp.Body, err)
	}
	if n := w.count(`SELECT count(*) FROM gateway_charge_calls WHERE order_id = $1 AND gateway_key = $2`, id, payment.ChargeKey(id, 1)); n != 1 {
		t.Errorf("%d gateway calls under attempt 1's key, want 1 (the released attempt taken over)", n)
	}
}

// TestTwoRunsAtOnce: two runs over the same gaps settle each once.
func TestTwoRunsAtOnce(t *testing.T) {
	w := newWorld(t)
	lost, _ := w.chargeLost()
	silent := w.order()
	w.exec(`UPDATE orders SET status = 'paid', paid_at = now() - interval '5 minutes' WHERE id = $1`, silent)

	// Both runs read every record before either settles anything.
	both := &barrier{Providers: reconcile.NewHTTPProviders(w.fakes, nil)}
	both.Add(2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := reconcile.New(w.pool, both, webhook.NewIngestor(w.pool, nil), reconcile.Config{Grace: time.Minute})
			if _, err := r.Run(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := outboxed(w, lost, "order_paid"); n != 1 {
		t.Errorf("order_paid written %d times by two runs, want 1", n)
	}
	if n := outboxed(w, silent, "order_confirmed"); n != 1 {
		t.Errorf("order_confirmed written %d times by two runs, want 1", n)
	}
}

// barrier holds each run after it read the providers until every run has.
type barrier struct {
	reconcile.Providers
	sync.WaitGroup
}

func (b *barrier) Notifications(ctx context.Context) ([]reconcile.Notification, error) {
	ns, err := b.Providers.Notifications(ctx)
	b.Done()
	b.Wait()
	return ns, err
}

// TestNotificationMissing: a paid order, quiet past the grace, whose e-mail
// the provider does not hold gets its one order_confirmed again, marked as
// a replay; one paid a moment ago is in flight, not missing.
func TestNotificationMissing(t *testing.T) {
	w := newWorld(t)
	silent, recent := w.order(), w.order()
	w.exec(`UPDATE orders SET status = 'paid', paid_at = now() - interval '5 minutes' WHERE id = $1`, silent)
	w.exec(`UPDATE orders SET status = 'paid', paid_at = now() WHERE id = $1`, recent)

	f := only(t, w.run(false), reconcile.NotificationMissing)
	if f.OrderID != silent || !f.Settled || !f.Waiting {
		t.Fatalf("finding %+v: want order %s settled, waiting for the worker to deliver it", f, silent)
	}
	if n := w.count(`SELECT count(*) FROM watermill_outbox WHERE order_id = $1
	                  AND payload -> 'metadata' ->> 'replayed_by' = 'orderpaid reconcile'`, silent); n != 1 {
		t.Errorf("%d order_confirmed marked as reconcile's replay, want 1", n)
	}
}

// TestRefundNotApplied: a refund the gateway made and the service never
// heard of is accepted as its payment.refunded.
func TestRefundNotApplied(t *testing.T) {
	w := newWorld(t)
	id := w.order()
	ch := w.post("/charges", payment.ChargeKey(id, 1), map[string]any{"order_id": id, "amount_cents": 10000, "currency": "BRL"})
	w.exec(`INSERT INTO order_charges (order_id, state, holder_scope, holder_key, charge_id) VALUES ($1, 'charged', 'c1', 'k1', $2)`, id, ch["id"])
	w.exec(`UPDATE orders SET status = 'paid', paid_at = now() - interval '5 minutes' WHERE id = $1`, id)
	w.post("/notifications", "n-"+id.String(), map[string]any{"order_id": id, "template": "order_confirmed"})
	w.post("/refunds", payment.RefundKey(id), map[string]any{"charge_id": ch["id"], "amount_cents": 10000})

	if f := only(t, w.run(false), reconcile.RefundNotApplied); !f.Settled {
		t.Fatalf("finding %+v: want settled", f)
	}
	if n := outboxed(w, id, "order_refunded"); n != 1 {
		t.Errorf("order_refunded written %d times, want 1", n)
	}
}

// TestProvidersDown: with the providers unreachable reconcile fails, says
// where it looked, and settles nothing.
func TestProvidersDown(t *testing.T) {
	w := newWorld(t)
	id, _ := w.chargeLost()
	r := reconcile.New(w.pool, reconcile.NewHTTPProviders("http://127.0.0.1:1", nil), webhook.NewIngestor(w.pool, nil), reconcile.Config{})
	_, err := r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GET http://127.0.0.1:1/charges") {
		t.Fatalf("err = %v, want one naming GET http://127.0.0.1:1/charges", err)
	}
	if n := outboxed(w, id, "order_paid"); n != 0 {
		t.Errorf("order_paid written %d times with the providers down, want 0", n)
	}
}

// TestAcceptedPaymentIsInFlight: a pending order whose payment.succeeded
// the webhook inbox accepted is only late (the worker has not paid it yet):
// reconcile leaves it to the flow.
func TestAcceptedPaymentIsInFlight(t *testing.T) {
	w := newWorld(t)
	id, _ := w.chargeLost()
	w.exec(`INSERT INTO webhook_inbox (event_id, event_type, order_id) VALUES ('evt_late', 'payment.succeeded', $1)`, id)
	if rep := w.run(false); len(rep.Findings) != 0 {
		t.Errorf("findings %+v, want none: the payment is accepted and on its way", rep.Findings)
	}
	if n := outboxed(w, id, "order_paid"); n != 0 {
		t.Errorf("order_paid written %d times for an accepted payment, want 0", n)
	}
}
