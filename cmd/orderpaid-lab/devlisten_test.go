package main

import (
	"bytes"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// `orderpaid-lab all` (what `make demo` runs) is a dev run: it verifies
// webhooks with the documented dev secret and serves the lab's levers. With
// HTTP_ADDR unset it listens on 127.0.0.1:8080, not on every interface, so
// no other machine on the network can forge a payment or pull a lever; and
// its lab controls refuse a request that names another host or comes from
// another page, and change nothing. It needs port 8080 free on this
// machine, and skips otherwise.
func TestDevRunListensOnLoopbackByDefault(t *testing.T) {
	t.Parallel()
	if ln, err := net.Listen("tcp", ":8080"); err != nil {
		t.Skipf("port 8080 is in use (%v): this test starts `orderpaid-lab all` on its default HTTP_ADDR", err)
	} else {
		ln.Close()
	}
	_, dbURL := pgtest.NewDatabase(t)
	out := newAddrWatcher("api", "fakes")
	startRun(t, merge(brokerEnv(t, "postgres"), map[string]string{
		"DATABASE_URL": dbURL, "FAKES_ADDR": freeAddr(t), config.DevVariable: "",
	}), out, "all")
	api := out.addr(t, "api")
	if api != "http://"+config.DevHTTPAddr {
		t.Fatalf("orderpaid-lab all listens on %s with HTTP_ADDR unset, want http://%s", api, config.DevHTTPAddr)
	}
	eventually(t, 10*time.Second, "api healthy", func() (bool, string) { return healthy(api + "/healthz") })

	control := func(host, origin string) int {
		t.Helper()
		req, err := http.NewRequest("POST", api+"/lab/guards/ledger-key", bytes.NewReader([]byte(`{"off":true}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ledgerKeyOff := func() bool {
		t.Helper()
		var st struct {
			Guards []struct {
				Name string `json:"name"`
				Off  bool   `json:"off"`
			} `json:"guards"`
		}
		call(t, "GET", api+"/lab/state", nil, nil, &st)
		for _, g := range st.Guards {
			if g.Name == "ledger-key" {
				return g.Off
			}
		}
		t.Fatal("GET /lab/state lists no ledger-key guard")
		return false
	}
	if got := control("evil.example", ""); got != http.StatusForbidden {
		t.Errorf("a control with Host: evil.example = %d, want 403", got)
	}
	if got := control("", "http://evil.example"); got != http.StatusForbidden {
		t.Errorf("a control with Origin: http://evil.example = %d, want 403", got)
	}
	if ledgerKeyOff() {
		t.Fatal("a refused control switched the ledger key off")
	}
	if got := control("localhost:8080", "http://localhost:8080"); got != http.StatusOK || !ledgerKeyOff() {
		t.Errorf("the lab page's control = %d, ledger key off %v; want 200 and off", got, ledgerKeyOff())
	}
}
