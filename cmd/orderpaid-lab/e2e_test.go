package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// TestEndToEnd starts `orderpaid-lab all` in-process on :0 against a fresh
// database, creates an order, pays it through the fake gateway (twice, with
// one Idempotency-Key), makes the gateway redeliver its webhook, concurrently
// and as a different event, and checks that every effect happened once, in
// the audit and at the fake providers.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			testEndToEnd(t, brokerEnv(t, b.name))
		})
	}
}

// TestEndToEndInBatchMode is TestEndToEnd with the worker in batch mode
// (CONSUMER_BATCH_SIZE=20), on each broker's batch source: postgres's
// read transaction, RabbitMQ's prefetch window, the JetStream durable.
func TestEndToEndInBatchMode(t *testing.T) {
	t.Parallel()
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			testEndToEnd(t, merge(brokerEnv(t, b.name), map[string]string{"CONSUMER_BATCH_SIZE": "20"}))
		})
	}
}

// TestEndToEndWithTheLogicalRelay is TestEndToEnd with the outbox relayed
// from the WAL (OUTBOX_RELAY=logical), per message and in batch mode, on
// every broker. It skips where wal_level is not logical (outside CI).
func TestEndToEndWithTheLogicalRelay(t *testing.T) {
	t.Parallel()
	pgtest.RequireLogicalWAL(t)
	for _, b := range brokers {
		for _, size := range []string{"1", "20"} {
			t.Run(b.name+"/batch_"+size, func(t *testing.T) {
				t.Parallel()
				testEndToEnd(t, merge(brokerEnv(t, b.name), map[string]string{"OUTBOX_RELAY": "logical", "CONSUMER_BATCH_SIZE": size}))
			})
		}
	}
}

func testEndToEnd(t *testing.T, brokerEnv map[string]string) {
	_, dbURL := pgtest.NewDatabase(t)
	out := newAddrWatcher("api", "fakes")
	startRun(t, merge(brokerEnv, map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": "127.0.0.1:0", "FAKES_ADDR": "127.0.0.1:0",
	}), out, "all")
	api, fakesURL := out.addr(t, "api"), out.addr(t, "fakes")

	eventually(t, 10*time.Second, "api healthy", func() (bool, string) { return healthy(api + "/healthz") })
	if got := call(t, "GET", api+"/readyz", nil, nil, nil); got != http.StatusOK {
		t.Fatalf("GET /readyz = %d, want 200", got)
	}

	var created struct{ ID, Status string }
	if got := call(t, "POST", api+"/orders", nil, map[string]any{
		"customer_id": "c1", "affiliate_id": "a1", "amount_cents": 10000, "currency": "BRL",
	}, &created); got != http.StatusCreated || created.Status != "pending" {
		t.Fatalf("POST /orders = %d %+v, want 201 pending", got, created)
	}

	key := map[string]string{"Idempotency-Key": "pay-" + created.ID}
	var first, second map[string]any
	if got := call(t, "POST", api+"/orders/"+created.ID+"/payments", key, map[string]any{}, &first); got != http.StatusCreated {
		t.Fatalf("first payment = %d %v, want 201", got, first)
	}
	if got := call(t, "POST", api+"/orders/"+created.ID+"/payments", key, map[string]any{}, &second); got != http.StatusCreated {
		t.Fatalf("retried payment = %d %v, want the stored 201", got, second)
	}

	settled := func(minExecutions int64) func() (bool, string) {
		return func() (bool, string) {
			var a audit
			call(t, "GET", api+"/orders/"+created.ID+"/audit", nil, nil, &a)
			return a.allEffectsOnce() && a.Executions["order_paid"] >= minExecutions, a.String()
		}
	}
	eventually(t, 30*time.Second, "every effect applied once", settled(1))

	var charges []struct {
		ID      string `json:"id"`
		OrderID string `json:"order_id"`
	}
	call(t, "GET", fakesURL+"/charges", nil, nil, &charges)
	if len(charges) != 1 {
		t.Fatalf("gateway made %d charges, want 1", len(charges))
	}

	// The provider repeats itself: three concurrent copies of the event, and
	// one new event for the same payment.
	call(t, "POST", fakesURL+"/charges/"+charges[0].ID+"/redeliver", nil, map[string]any{"count": 3, "concurrent": true}, nil)
	call(t, "POST", fakesURL+"/charges/"+charges[0].ID+"/redeliver", nil, map[string]any{"count": 1, "new_event_id": true}, nil)
	eventually(t, 30*time.Second, "the new event's order_paid handled, effects still once", settled(2))

	var notifications []map[string]any
	call(t, "GET", fakesURL+"/notifications", nil, nil, &notifications)
	if len(notifications) != 1 {
		t.Errorf("provider sent %d notifications, want 1", len(notifications))
	}
	var o struct {
		Status string  `json:"status"`
		PaidAt *string `json:"paid_at"`
	}
	call(t, "GET", api+"/orders/"+created.ID, nil, nil, &o)
	if o.Status != "paid" || o.PaidAt == nil {
		t.Errorf("GET /orders/{id} = %+v, want paid with paid_at", o)
	}
}
