package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// outage stops and restarts one broker for a test.
type outage struct {
	stop, start func(t *testing.T)
}

// natsOutage runs a private nats-server, so stopping it disturbs no other test.
func natsOutage(t *testing.T, env map[string]string) outage {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		bin = "/usr/sbin/nats-server"
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nats-server is required in CI")
		}
		t.Skip("nats-server is not installed")
	}
	addr, dir := freeAddr(t), t.TempDir()
	host, port, _ := net.SplitHostPort(addr)
	env["NATS_URL"] = "nats://" + addr
	var cmd *exec.Cmd
	start := func(t *testing.T) {
		cmd = exec.Command(bin, "-a", host, "-p", port, "-js", "-sd", dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "private nats-server up", func() (bool, string) {
			return dialable(addr), "not listening"
		})
	}
	stop := func(t *testing.T) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	start(t)
	t.Cleanup(func() { stop(t) })
	return outage{stop: stop, start: start}
}

// amqpOutage stops and starts the RabbitMQ application of the local node. It
// disturbs every other user of RabbitMQ, so it runs only when
// ORDERPAID_DISRUPTIVE=1 (scripts/test.sh runs it alone, after the suite).
func amqpOutage(t *testing.T) outage {
	t.Helper()
	if os.Getenv("ORDERPAID_DISRUPTIVE") != "1" {
		t.Skip("stops the shared RabbitMQ: runs alone with ORDERPAID_DISRUPTIVE=1 (scripts/test.sh does)")
	}
	ctl := func(t *testing.T, args ...string) {
		if out, err := exec.Command("rabbitmqctl", args...).CombinedOutput(); err != nil {
			t.Fatalf("rabbitmqctl %v: %v\n%s", args, err, out)
		}
	}
	o := outage{
		stop:  func(t *testing.T) { ctl(t, "stop_app") },
		start: func(t *testing.T) { ctl(t, "start_app"); ctl(t, "await_startup") },
	}
	t.Cleanup(func() { o.start(t) })
	return o
}

// TestBrokerDownAndBack takes the broker away while orders are being paid:
// the worker keeps running, /readyz says not ready, payments and webhooks are
// still accepted (they only need the database: the outbox holds the
// messages), and when the broker returns everything flows, nothing lost.
func TestBrokerDownAndBack(t *testing.T) {
	for _, name := range []string{"amqp", "nats"} {
		t.Run(name, func(t *testing.T) {
			env := brokerEnv(t, name)
			var o outage
			if name == "nats" {
				t.Parallel()
				o = natsOutage(t, env)
			} else {
				o = amqpOutage(t)
			}
			testBrokerDownAndBack(t, env, o)
		})
	}
}

func testBrokerDownAndBack(t *testing.T, brokerEnv map[string]string, o outage) {
	_, dbURL := pgtest.NewDatabase(t)
	out := newAddrWatcher("api", "fakes")
	startRun(t, merge(brokerEnv, map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": "127.0.0.1:0", "FAKES_ADDR": "127.0.0.1:0",
	}), out, "all")
	api := out.addr(t, "api")
	payOne := func(i int) string {
		var ord struct{ ID string }
		call(t, "POST", api+"/orders", nil, map[string]any{"customer_id": fmt.Sprint("c", i), "affiliate_id": "a1", "amount_cents": 700, "currency": "BRL"}, &ord)
		if got := call(t, "POST", api+"/orders/"+ord.ID+"/payments", map[string]string{"Idempotency-Key": "k"}, map[string]any{}, nil); got != http.StatusCreated {
			t.Fatalf("payment %d: status %d", i, got)
		}
		return ord.ID
	}
	settled := func(id string) {
		eventually(t, 90*time.Second, "order "+id+" settled", func() (bool, string) {
			var a audit
			call(t, "GET", api+"/orders/"+id+"/audit", nil, nil, &a)
			return a.allEffectsOnce(), a.String()
		})
	}
	settled(payOne(0))

	o.stop(t)
	eventually(t, 30*time.Second, "/readyz reports the broker down", func() (bool, string) {
		ok, state := healthy(api + "/readyz")
		return !ok, state
	})
	var during []string
	for i := 1; i <= 5; i++ {
		during = append(during, payOne(i))
	}

	o.start(t)
	eventually(t, 60*time.Second, "/readyz ready again", func() (bool, string) { return healthy(api + "/readyz") })
	for _, id := range during {
		settled(id)
	}
}

func dialable(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
