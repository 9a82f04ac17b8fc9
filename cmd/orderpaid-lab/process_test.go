package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the orderpaid command once per test run, for tests that need
// real processes (to SIGKILL them).
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "orderpaid-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath, buildErr = childproc.Build(dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// freeAddr returns an address on 127.0.0.1 for a process to listen on.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := childproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// startWorkerProcess starts `orderpaid worker` as a real child process. Its
// output is kept and shown only if the test fails.
func startWorkerProcess(t *testing.T, env map[string]string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"worker"}, args...)...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // harmless if it already exited
		if t.Failed() {
			t.Logf("output of worker %d %v:\n%s", cmd.Process.Pid, args, out.tail(60))
		}
	})
	return cmd
}

// syncBuffer collects a child process's output from its copying goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) tail(lines int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := strings.Split(string(s.b), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// splitStack is api and fakes running in-process on their own free ports,
// with the environment a worker process needs to join them.
type splitStack struct {
	env        map[string]string
	api, fakes string // base URLs
}

// startSplitStack starts api and fakes in-process against a fresh database;
// the test starts its worker processes itself.
func startSplitStack(t *testing.T, brokerEnv map[string]string) splitStack {
	t.Helper()
	_, dbURL := pgtest.NewDatabase(t)
	apiAddr, fakesAddr := freeAddr(t), freeAddr(t)
	env := merge(brokerEnv, map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": apiAddr, "FAKES_ADDR": fakesAddr,
		"FAKES_URL": "http://" + fakesAddr, "WEBHOOK_URL": "http://" + apiAddr + "/webhooks/payments",
	})
	startRun(t, env, newAddrWatcher(), "fakes")
	startRun(t, env, newAddrWatcher(), "api")
	st := splitStack{env: env, api: "http://" + apiAddr, fakes: "http://" + fakesAddr}
	eventually(t, 10*time.Second, "api healthy", func() (bool, string) { return healthy(st.api + "/healthz") })
	return st
}

// TestWorkerKilledAndRestarted pays orders while the worker process is
// SIGKILLed mid-flow, once at a random moment and once right after the
// notification provider answered (before the inbox row was written), then
// restarted. Every order must end with every effect exactly once, in the
// audit and at the fake providers; and SIGTERM must stop the worker cleanly.
func TestWorkerKilledAndRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills real processes")
	}
	t.Parallel()
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			testWorkerKilledAndRestarted(t, brokerEnv(t, b.name))
		})
	}
}

func testWorkerKilledAndRestarted(t *testing.T, brokerEnv map[string]string) {
	st := startSplitStack(t, brokerEnv)
	env, api, fakesURL := st.env, st.api, st.fakes

	// First worker: dies (exit 137, like SIGKILL) right after its first
	// provider call, before the inbox row.
	first := startWorkerProcess(t, merge(env, map[string]string{"ORDERPAID_DEV": "1"}), "--faults", "order_confirmed.after_provider_call=crash:1")

	const n = 20
	ids := make([]string, n)
	for i := range ids {
		var o struct{ ID string }
		call(t, "POST", api+"/orders", nil, map[string]any{"customer_id": "c1", "affiliate_id": "a1", "amount_cents": 1000 + i, "currency": "BRL"}, &o)
		ids[i] = o.ID
		if got := call(t, "POST", api+"/orders/"+o.ID+"/payments", map[string]string{"Idempotency-Key": "k-" + o.ID}, map[string]any{}, nil); got != http.StatusCreated {
			t.Fatalf("payment %d: status %d", i, got)
		}
	}
	if err := first.Wait(); err == nil {
		t.Fatal("the first worker should have crashed at the armed fault point")
	}

	// Second worker: SIGKILLed as soon as it has sent a few notifications.
	second := startWorkerProcess(t, env)
	eventually(t, 90*time.Second, "a few notifications", func() (bool, string) {
		var sent []map[string]any
		call(t, "GET", fakesURL+"/notifications", nil, nil, &sent)
		return len(sent) >= 3, fmt.Sprintf("%d sent", len(sent))
	})
	_ = second.Process.Signal(syscall.SIGKILL)
	_ = second.Wait()

	// Third worker: finishes the work, then stops on SIGTERM with exit 0.
	// The second may have finished it already: startServing waits until
	// the third has started (it serves /metrics), so the SIGTERM below
	// stops a running worker, whatever the timing.
	third := startServing(t, env)
	for _, id := range ids {
		eventually(t, 60*time.Second, "order "+id+" settled", func() (bool, string) {
			var a audit
			call(t, "GET", api+"/orders/"+id+"/audit", nil, nil, &a)
			return a.allEffectsOnce(), a.String()
		})
	}
	var charges, notifications []map[string]any
	call(t, "GET", fakesURL+"/charges", nil, nil, &charges)
	call(t, "GET", fakesURL+"/notifications", nil, nil, &notifications)
	if len(charges) != n || len(notifications) != n {
		t.Errorf("gateway charged %d times and provider notified %d times, want %d and %d", len(charges), len(notifications), n, n)
	}

	stopServing(t, third) // SIGTERM, and exit 0 within 30s
}
