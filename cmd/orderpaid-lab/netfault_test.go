package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/netfault"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// netStack is api and fakes in-process (startSplitStack) and a worker
// in-process whose every connection goes through a proxy of its own: to
// PostgreSQL, to the broker (on BROKER=postgres the database is the broker:
// the same proxy) and to the notification provider. The api and the test's
// own pool reach the database directly.
type netStack struct {
	splitStack
	pg, broker, provider *netfault.Proxy
	workerEnv            map[string]string
	pool                 *pgxpool.Pool
	// orders are the orders paid so far, the invariants' subject.
	orders []uuid.UUID
}

func newNetStack(t *testing.T, brokerName string) *netStack {
	t.Helper()
	ns := &netStack{splitStack: startSplitStack(t, brokerEnv(t, brokerName))}
	dbURL := ns.env["DATABASE_URL"]
	ns.pg = startProxy(t, "postgres", dbURL)
	ns.provider = startProxy(t, "provider", ns.fakes)
	ns.workerEnv = merge(ns.env, map[string]string{
		"DATABASE_URL": via(t, dbURL, ns.pg),
		"FAKES_URL":    via(t, ns.fakes, ns.provider),
	})
	ns.broker = ns.pg
	for name, urlVar := range map[string]string{"amqp": "AMQP_URL", "nats": "NATS_URL"} {
		if brokerName == name {
			ns.broker = startProxy(t, name, ns.env[urlVar])
			ns.workerEnv[urlVar] = via(t, ns.env[urlVar], ns.broker)
		}
	}
	pool, err := postgres.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ns.pool = pool
	return ns
}

// startWorker starts `orderpaid worker args...` in-process, behind the
// proxies, and waits until one order has gone all the way through it: by
// then every subscription of the worker is up. A fault during its start-up
// is another test: the worker exits, for its supervisor to start it again.
func (ns *netStack) startWorker(t *testing.T, args ...string) {
	t.Helper()
	out := &runningWatcher{running: make(chan struct{})}
	startRun(t, ns.workerEnv, out, append([]string{"worker"}, args...)...)
	select {
	case <-out.running:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not start within 30s")
	}
	warmUp := ns.payOrders(t, 1)[0]
	eventually(t, 30*time.Second, "the first order confirmed", func() (bool, string) {
		sent, _ := ns.perOrder(t, "/notifications")
		return sent[warmUp] == 1, "not yet"
	})
}

// runningWatcher is the stdout of an in-process worker: it closes running
// once the worker says it runs.
type runningWatcher struct {
	mu      sync.Mutex
	seen    strings.Builder
	running chan struct{}
}

func (w *runningWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := strings.Contains(w.seen.String(), "worker running")
	w.seen.Write(p)
	if !was && strings.Contains(w.seen.String(), "worker running") {
		close(w.running)
	}
	return len(p), nil
}

func startProxy(t *testing.T, name, upstreamURL string) *netfault.Proxy {
	t.Helper()
	upstream, err := netfault.Upstream(upstreamURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := netfault.Start(name, upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func via(t *testing.T, rawURL string, p *netfault.Proxy) string {
	t.Helper()
	u, err := netfault.Via(rawURL, p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// proxies are the distinct proxies of the stack.
func (ns *netStack) proxies() []*netfault.Proxy {
	if ns.broker == ns.pg {
		return []*netfault.Proxy{ns.pg, ns.provider}
	}
	return []*netfault.Proxy{ns.pg, ns.broker, ns.provider}
}

// payOrders creates n orders with an affiliate and pays each through the API.
func (ns *netStack) payOrders(t *testing.T, n int) []uuid.UUID {
	t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		var o struct{ ID uuid.UUID }
		call(t, "POST", ns.api+"/orders", nil, map[string]any{"customer_id": "c1", "affiliate_id": "a1", "amount_cents": 1000 + i, "currency": "BRL"}, &o)
		if got := call(t, "POST", ns.api+"/orders/"+o.ID.String()+"/payments", map[string]string{"Idempotency-Key": "k-" + o.ID.String()}, map[string]any{}, nil); got != 201 {
			t.Fatalf("payment %d: status %d", i, got)
		}
		ids[i] = o.ID
	}
	ns.orders = append(ns.orders, ids...)
	return ids
}

// perOrder counts the records of GET fakes+path (/charges, /notifications)
// per order.
func (ns *netStack) perOrder(t *testing.T, path string) (map[uuid.UUID]int, int) {
	t.Helper()
	var records []struct {
		OrderID uuid.UUID `json:"order_id"`
	}
	call(t, "GET", ns.fakes+path, nil, nil, &records)
	counts := map[uuid.UUID]int{}
	for _, r := range records {
		counts[r.OrderID]++
	}
	return counts, len(records)
}

// waitNotified waits until the provider has sent at least n notifications
// for the orders paid after the worker's first.
func (ns *netStack) waitNotified(t *testing.T, n int) {
	t.Helper()
	n++ // the worker's first order
	eventually(t, 60*time.Second, fmt.Sprintf("%d notifications sent", n), func() (bool, string) {
		_, sent := ns.perOrder(t, "/notifications")
		return sent >= n, fmt.Sprintf("%d sent", sent)
	})
}

// audits reads the audit of every order in SQL (the query behind
// GET /orders/{id}/audit).
func (ns *netStack) audits(t *testing.T, ids []uuid.UUID) []queries.AuditOrderRow {
	t.Helper()
	q := queries.New(ns.pool)
	rows := make([]queries.AuditOrderRow, len(ids))
	for i, id := range ids {
		var err error
		if rows[i], err = q.AuditOrder(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

// effects are the audit's effects of one order, by name.
func effects(a queries.AuditOrderRow) map[string]int64 {
	return map[string]int64{
		"paid": a.Paid, "commission": a.Commission, "confirmation_enqueued": a.ConfirmationEnqueued,
		"confirmation_delivered": a.ConfirmationDelivered, "notification_sent": a.NotificationSent,
	}
}

// checkInvariants waits until every order is confirmed (each effect in the
// audit, its e-mail at the provider: at least once, so that a double effect
// fails at once instead of after the wait), lets late repeats land, and then
// checks every invariant: each effect exactly once in SQL, one charge and
// one notification per order at the fakes, nothing in the poison queue.
func (ns *netStack) checkInvariants(t *testing.T) {
	t.Helper()
	ids := ns.orders
	eventually(t, 90*time.Second, "every order confirmed", func() (bool, string) {
		sent, _ := ns.perOrder(t, "/notifications")
		for i, a := range ns.audits(t, ids) {
			for name, n := range effects(a) {
				if n < 1 || sent[ids[i]] < 1 {
					return false, fmt.Sprintf("order %s: %s=%d, %d notifications", ids[i], name, n, sent[ids[i]])
				}
			}
		}
		return true, ""
	})
	time.Sleep(1500 * time.Millisecond) // a repeat still in flight lands now, or never
	for i, a := range ns.audits(t, ids) {
		for name, n := range effects(a) {
			if n != 1 {
				t.Errorf("order %s: effect %s happened %d times, want 1 (executions: order_paid %d, order_confirmed %d)",
					ids[i], name, n, a.ExecutionsOrderPaid, a.ExecutionsOrderConfirmed)
			}
		}
	}
	for _, path := range []string{"/charges", "/notifications"} {
		counts, total := ns.perOrder(t, path)
		for _, id := range ids {
			if counts[id] != 1 {
				t.Errorf("GET %s: %d records for order %s, want 1", path, counts[id], id)
			}
		}
		if total != len(ids) {
			t.Errorf("GET %s: %d records for %d orders", path, total, len(ids))
		}
	}
	poisoned, err := queries.New(ns.pool).PoisonCountPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if poisoned != 0 {
		t.Errorf("%d messages in the poison queue: a network fault is transient, nothing should be poisoned", poisoned)
	}
}

// addToxic adds a toxic to p or fails the test.
func addToxic(t *testing.T, p *netfault.Proxy, name, typ, stream string, attrs map[string]any) {
	t.Helper()
	if err := p.AddToxic(name, typ, stream, attrs); err != nil {
		t.Fatal(err)
	}
}

func removeToxic(t *testing.T, p *netfault.Proxy, name string) {
	t.Helper()
	if err := p.RemoveToxic(name); err != nil {
		t.Fatal(err)
	}
}

// TestNetworkFaults puts a broken network between the worker and PostgreSQL,
// the broker and the notification provider, and checks after each fault that
// every order ends confirmed with every effect exactly once. Each fault is a
// timeout or a cut that can leave partial state: the other side acted, the
// worker saw an error and does the work again.
func TestNetworkFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real workers behind proxies")
	}
	t.Parallel()
	faults := []struct {
		name string
		test func(t *testing.T, brokerName string)
		// postgresOnly: the fault is the same on every broker, and slow
		// (the provider's 10s timeout must pass): once is enough.
		postgresOnly bool
	}{
		{"commit acknowledgement lost", testCommitAckLost, false},
		{"latency past the timeouts", testLatencyPastTimeouts, true},
		{"connections reset mid-batch", testResetMidBatch, false},
		{"partition", testPartition, false},
	}
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, f := range faults {
				if f.postgresOnly && b.name != "postgres" {
					continue
				}
				t.Run(f.name, func(t *testing.T) {
					t.Parallel()
					f.test(t, b.name)
				})
			}
		})
	}
}

// testCommitAckLost cuts the worker's database connection exactly when the
// server acknowledges the COMMIT of order_paid's step 1 (the transaction
// that reported "UPDATE 1": the order moved to paid), twice. The order is
// paid and its confirmation is in the outbox, but the handler saw an error
// and runs the message again; the state check answers already_applied.
// Without it (--without state-check) the order transitions twice.
func testCommitAckLost(t *testing.T, brokerName string) {
	ns := newNetStack(t, brokerName)
	const n, cuts = 4, 2
	ns.startWorker(t)
	cut, err := ns.pg.LoseCommitAck("UPDATE 1", cuts)
	if err != nil {
		t.Fatal(err)
	}
	ids := ns.payOrders(t, n)
	eventually(t, 60*time.Second, "two commit acknowledgements lost", func() (bool, string) {
		return cut.Cuts() == cuts, fmt.Sprintf("%d cut", cut.Cuts())
	})
	ns.checkInvariants(t)
	var runs int64
	for _, a := range ns.audits(t, ids) {
		runs += a.ExecutionsOrderPaid
	}
	if runs < n+cuts {
		t.Errorf("order_paid ran %d times for %d orders, want at least %d: the cut did not hit order_paid's transaction", runs, n, n+cuts)
	}
}

// testLatencyPastTimeouts slows each link past the timeout that guards it.
// The database: 200ms each way, against an idle_in_transaction_session_timeout
// of 250ms, so the server ends the worker's transactions while it waits for
// their next statement. The broker (RabbitMQ, NATS): 200ms each way. The provider: its
// answers arrive 11s late, past the worker's 10s request timeout, after the
// e-mail was sent: the worker retries with the same key, and the provider
// answers from its store.
func testLatencyPastTimeouts(t *testing.T, brokerName string) {
	ns := newNetStack(t, brokerName)
	setDatabaseParameter(t, ns.pool, ns.env["DATABASE_URL"], "idle_in_transaction_session_timeout", "250ms")
	ns.startWorker(t)
	addToxic(t, ns.provider, "slow_answers", "latency", "downstream", map[string]any{"latency": 11000})
	slow := ns.proxies()[:len(ns.proxies())-1] // the database and the broker
	for _, p := range slow {
		for _, stream := range []string{"upstream", "downstream"} {
			addToxic(t, p, "slow_"+stream, "latency", stream, map[string]any{"latency": 200})
		}
	}
	ns.payOrders(t, 3)
	time.Sleep(2 * time.Second)
	for _, p := range slow {
		removeToxic(t, p, "slow_upstream")
		removeToxic(t, p, "slow_downstream")
	}
	eventually(t, 60*time.Second, "a provider call timed out after the e-mail was sent", func() (bool, string) {
		var timedOut int
		err := ns.pool.QueryRow(context.Background(),
			"SELECT count(*) FROM executions WHERE handler = 'order_confirmed' AND error LIKE '%Timeout%'").Scan(&timedOut)
		_, sent := ns.perOrder(t, "/notifications")
		return err == nil && timedOut > 0 && sent > 0, fmt.Sprintf("%d timed out, %d sent, err %v", timedOut, sent, err)
	})
	removeToxic(t, ns.provider, "slow_answers")
	ns.checkInvariants(t)
}

// testResetMidBatch resets every connection of the worker for 1.5s in the
// middle of a batch: the database's and the provider's abruptly (reset_peer:
// a request may have reached the provider, its answer is lost), the
// broker's by stopping its data and closing it after a second (timeout).
func testResetMidBatch(t *testing.T, brokerName string) {
	type toxic struct {
		p                 *netfault.Proxy
		name, typ, stream string
		attrs             map[string]any
	}
	midBatch(t, brokerName, 8, 1500*time.Millisecond, func(ns *netStack) func() {
		faults := []toxic{
			{ns.pg, "reset_up", "reset_peer", "upstream", map[string]any{"timeout": 0}},
			{ns.pg, "reset_down", "reset_peer", "downstream", map[string]any{"timeout": 0}},
			{ns.provider, "reset_down", "reset_peer", "downstream", map[string]any{"timeout": 0}},
		}
		if ns.broker != ns.pg {
			faults = append(faults, toxic{ns.broker, "timeout", "timeout", "downstream", map[string]any{"timeout": 1000}})
		}
		for _, f := range faults {
			addToxic(t, f.p, f.name, f.typ, f.stream, f.attrs)
		}
		return func() {
			for _, f := range faults {
				removeToxic(t, f.p, f.name)
			}
		}
	})
}

// testPartition cuts the worker off from everything for 3s in the middle of
// a batch: every connection is closed, new ones are refused; then the
// network comes back.
func testPartition(t *testing.T, brokerName string) {
	midBatch(t, brokerName, 6, 3*time.Second, func(ns *netStack) func() {
		for _, p := range ns.proxies() {
			p.Disable()
		}
		return func() {
			for _, p := range ns.proxies() {
				if err := p.Enable(); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// midBatch pays n orders through a provider slowed to 300ms an answer and,
// once the batch's first e-mail is out, injects a fault (which returns how
// to lift it), holds it for hold, lifts it and checks every invariant.
func midBatch(t *testing.T, brokerName string, n int, hold time.Duration, inject func(*netStack) (lift func())) {
	ns := newNetStack(t, brokerName)
	ns.startWorker(t)
	addToxic(t, ns.provider, "slow_provider", "latency", "downstream", map[string]any{"latency": 300})
	ns.payOrders(t, n)
	ns.waitNotified(t, 1)
	lift := inject(ns)
	if _, sent := ns.perOrder(t, "/notifications"); sent >= len(ns.orders) {
		t.Fatalf("all %d e-mails were sent before the fault: it did not land mid-batch", sent)
	}
	time.Sleep(hold)
	lift()
	removeToxic(t, ns.provider, "slow_provider")
	ns.checkInvariants(t)
}

// setDatabaseParameter sets a server parameter for the new sessions of the
// database of dbURL (the worker's, which start after it).
func setDatabaseParameter(t *testing.T, pool *pgxpool.Pool, dbURL, param, value string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()
	if _, err := pool.Exec(context.Background(), fmt.Sprintf("ALTER DATABASE %s SET %s = '%s'", name, param, value)); err != nil {
		t.Fatal(err)
	}
}
