package main

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestScaleOut runs three worker processes (three relays, three sets of
// consumers) against one database and one broker. Nothing may be applied
// twice or lost; and in this fault-free run the relays must not publish a row
// twice: each order_paid runs exactly once.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel()
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			testScaleOut(t, brokerEnv(t, b.name))
		})
	}
}

func testScaleOut(t *testing.T, brokerEnv map[string]string) {
	st := startSplitStack(t, brokerEnv)
	env, api, fakesURL := st.env, st.api, st.fakes
	for i := 0; i < 3; i++ {
		startWorkerProcess(t, env)
	}

	const n = 30
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o struct{ ID string }
			call(t, "POST", api+"/orders", nil, map[string]any{"customer_id": fmt.Sprint("c", i), "affiliate_id": "a1", "amount_cents": 500, "currency": "BRL"}, &o)
			ids[i] = o.ID
			if got := call(t, "POST", api+"/orders/"+o.ID+"/payments", map[string]string{"Idempotency-Key": "k"}, map[string]any{}, nil); got != http.StatusCreated {
				t.Errorf("payment %d: status %d", i, got)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		eventually(t, 60*time.Second, "order "+id+" settled", func() (bool, string) {
			var a audit
			call(t, "GET", api+"/orders/"+id+"/audit", nil, nil, &a)
			return a.allEffectsOnce() && a.Executions["order_confirmed"] >= 1, a.String()
		})
	}
	time.Sleep(time.Second) // let any duplicate publication arrive before counting
	for _, id := range ids {
		var a audit
		call(t, "GET", api+"/orders/"+id+"/audit", nil, nil, &a)
		if !a.allEffectsOnce() || a.Executions["order_paid"] != 1 || a.Executions["order_confirmed"] != 1 {
			t.Errorf("order %s: %s, want every effect once and each handler run once", id, a)
		}
	}
	var charges, notifications []map[string]any
	call(t, "GET", fakesURL+"/charges", nil, nil, &charges)
	call(t, "GET", fakesURL+"/notifications", nil, nil, &notifications)
	if len(charges) != n || len(notifications) != n {
		t.Errorf("charges=%d notifications=%d, want %d each", len(charges), len(notifications), n)
	}
}
