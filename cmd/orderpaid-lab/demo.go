package main

import (
	"cmp"
	"flag"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/demo"
)

// runDemo walks one order through a running api + fakes (`orderpaid-lab all`)
// and narrates what each guard did. scripts/demo.sh starts the server and
// calls it. The API and the fakes are found where the environment says they
// listen (API_URL, else HTTP_ADDR; FAKES_URL, else FAKES_ADDR), so a run on
// other ports needs no flags.
func runDemo(e env) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	api := fs.String("api", cmp.Or(e.Getenv("API_URL"), urlOfAddr(cmp.Or(e.Getenv("HTTP_ADDR"), ":8080"))),
		"base URL of the API (default $API_URL, else the HTTP_ADDR port on localhost)")
	fakesURL := fs.String("fakes", cmp.Or(e.Getenv("FAKES_URL"), urlOfAddr(cmp.Or(e.Getenv("FAKES_ADDR"), ":8081"))),
		"base URL of the fake providers (default $FAKES_URL, else the FAKES_ADDR port on localhost)")
	if err := parseFlags(fs, e, "[--api URL] [--fakes URL]"); err != nil {
		return helpOK(err)
	}
	d := demo.Walk{API: strings.TrimSuffix(*api, "/"), Fakes: strings.TrimSuffix(*fakesURL, "/"), Out: e.Stdout,
		HTTP: &http.Client{Timeout: 10 * time.Second}, SettleTimeout: 30 * time.Second, Quiet: 1500 * time.Millisecond}
	return d.Run()
}

// urlOfAddr turns a listen address (":8080", "0.0.0.0:8080",
// "127.0.0.1:18080") into the URL a client on this machine reaches it at.
func urlOfAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
