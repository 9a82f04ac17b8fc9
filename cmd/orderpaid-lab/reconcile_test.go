package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// A cron job reads reconcile's exit status: 0 must mean done. A run that
// resends a paid order's confirmation has only written it to the outbox,
// and the e-mail goes out once the worker delivers it; until then the run
// exits 3 and its summary says it is not done. Once the worker has
// delivered it, the next run finds nothing and exits 0.
func TestReconcileExitsWaitingUntilTheWorkerApplied(t *testing.T) {
	t.Parallel()
	pool, dbURL := pgtest.NewDatabase(t)
	gw := fakes.NewGateway(fakes.GatewayConfig{})
	t.Cleanup(gw.Close)
	providers := httptest.NewServer(fakes.New(gw, fakes.NewNotifier()))
	t.Cleanup(providers.Close)
	var id string
	if err := pool.QueryRow(t.Context(), `INSERT INTO orders (id, customer_id, amount_cents, currency, status, paid_at)
		VALUES (gen_random_uuid(), 'c1', 10000, 'BRL', 'paid', now() - interval '5 minutes') RETURNING id::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": dbURL, "FAKES_URL": providers.URL}

	code, out := runBinary(t, env, time.Minute, "reconcile")
	if code != 3 || !strings.Contains(out, "resent: order_confirmed") || !strings.Contains(out, "not done: 1 settled finding(s) wait for the worker") {
		t.Fatalf("first run: exit %d, want 3 with a summary saying it waits for the worker; output:\n%s", code, out)
	}
	if code, out := runBinary(t, env, time.Minute, "reconcile"); code != 3 {
		t.Fatalf("second run, nothing delivered yet: exit %d, want 3 (already settled, still waiting); output:\n%s", code, out)
	}

	// The worker delivers the confirmation: the provider holds the e-mail,
	// the consumer inbox its row.
	if status := call(t, http.MethodPost, providers.URL+"/notifications", map[string]string{"Idempotency-Key": "n-" + id},
		map[string]any{"order_id": id, "template": "order_confirmed"}, nil); status/100 != 2 {
		t.Fatalf("POST /notifications = %d", status)
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO consumer_inbox (consumer, message_id, order_id)
		SELECT 'order_confirmed', message_id, order_id FROM watermill_outbox WHERE order_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if code, out := runBinary(t, env, time.Minute, "reconcile"); code != 0 || !strings.Contains(out, "0 finding(s)") {
		t.Fatalf("run after the worker delivered: exit %d, want 0 with nothing found; output:\n%s", code, out)
	}
}

// Outside a dev run reconcile refuses a --grace shorter than an api request
// may still be working on an order's charge (it acted on work in flight:
// --grace 1ms resent live confirmations). In a dev run the lab's scenarios
// and soak shorten it on orders they drive, and it gets past its flags.
func TestReconcileGraceBelowTheChargeInFlight(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": unreachableDB}
	for _, grace := range []string{"1ms", "39s"} {
		code, out := runBinary(t, env, 10*time.Second, "reconcile", "--grace", grace)
		if code != 2 || !strings.Contains(out, "--grace "+grace) || !strings.Contains(out, "want at least 40s") {
			t.Errorf("--grace %s: exit %d, want 2 naming the flag and the minimum; output:\n%s", grace, code, out)
		}
	}
	if code, out := runBinary(t, env, 10*time.Second, "reconcile", "--grace", "40s"); code != 1 || !strings.Contains(out, "reach PostgreSQL") {
		t.Errorf("--grace 40s: exit %d, want 1 at the database; output:\n%s", code, out)
	}
	env["ORDERPAID_DEV"] = "1"
	if code, out := runBinary(t, env, 10*time.Second, "reconcile", "--grace", "1s"); code != 1 || !strings.Contains(out, "reach PostgreSQL") {
		t.Errorf("dev run, --grace 1s: exit %d, want 1 at the database; output:\n%s", code, out)
	}
}
