package netfault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// Ports a proxy may listen on: below the kernel's ephemeral range, which
// outgoing connections may be holding.
const (
	portMin = 20000
	portMax = 32000 // exclusive
)

// Proxy forwards TCP connections from Addr to an upstream server, through
// the faults added to it.
type Proxy struct {
	name string
	p    *toxiproxy.Proxy
}

// Start starts a proxy called name (it appears in errors) in this process,
// forwarding to upstream (host:port), on a free port of 127.0.0.1.
func Start(name, upstream string) (*Proxy, error) {
	// Registering a type twice replaces it with itself: safe for every proxy.
	toxics.Register(commitAckLostType, new(CommitAckLost))
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	var err error
	for range 50 {
		listen := fmt.Sprintf("127.0.0.1:%d", portMin+rand.IntN(portMax-portMin))
		p := toxiproxy.NewProxy(server, name, listen, upstream)
		if err = p.Start(); err == nil {
			return &Proxy{name: name, p: p}, nil
		}
	}
	return nil, fmt.Errorf("start proxy %s to %s: no free port between %d and %d: %w", name, upstream, portMin, portMax-1, err)
}

// Addr is where clients connect instead of the upstream server.
func (p *Proxy) Addr() string { return p.p.Listen }

// AddToxic adds one of toxiproxy's toxics to every connection, present and
// future: typ is its type ("latency", "reset_peer", "timeout", ...), stream
// "downstream" (server to client) or "upstream" (client to server), attrs
// its attributes ({"latency": 500}). name identifies it for RemoveToxic.
func (p *Proxy) AddToxic(name, typ, stream string, attrs map[string]any) error {
	_, err := p.add(name, typ, stream, attrs)
	return err
}

func (p *Proxy) add(name, typ, stream string, attrs any) (*toxics.ToxicWrapper, error) {
	body, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1, "attributes": attrs})
	if err != nil {
		return nil, err
	}
	w, err := p.p.Toxics.AddToxicJson(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("add toxic %s (%s, %s) to proxy %s: %w", name, typ, stream, p.name, err)
	}
	return w, nil
}

// RemoveToxic removes the toxic called name: the data flows again.
func (p *Proxy) RemoveToxic(name string) error {
	if err := p.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("remove toxic %s from proxy %s: %w", name, p.name, err)
	}
	return nil
}

// LoseCommitAck makes the proxy cut, up to count times (0: every time), the
// connection of a transaction that has committed, at the moment the server
// acknowledges the COMMIT: the server has committed, the client sees the
// connection break. marker picks the transactions: one in which the server
// reported that command tag ("UPDATE 1": it updated one row); "" for any.
// The returned toxic says how many commits it cut.
//
// The upstream must be PostgreSQL and its clients must not use TLS
// (sslmode=disable): the proxy reads the server's messages.
func (p *Proxy) LoseCommitAck(marker string, count int) (*CommitAckLost, error) {
	w, err := p.add("commit_ack_lost", commitAckLostType, "downstream", map[string]any{"marker": marker, "count": count})
	if err != nil {
		return nil, err
	}
	t, ok := w.Toxic.(*CommitAckLost)
	if !ok {
		return nil, errors.New("toxiproxy built the commit_ack_lost toxic as another type")
	}
	return t, nil
}

// Disable starts a partition: every open connection is closed and new ones
// are refused until Enable.
func (p *Proxy) Disable() { p.p.Stop() }

// Enable ends a partition: the proxy listens again, on the same address.
func (p *Proxy) Enable() error {
	if err := p.p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return fmt.Errorf("enable proxy %s on %s again: %w", p.name, p.Addr(), err)
	}
	return nil
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() { p.p.Stop() }

// Upstream returns the host:port a URL (postgres://, amqp://, nats://,
// http://) points at, for Start.
func Upstream(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%q is not a URL with a host", rawURL)
	}
	if u.Port() == "" {
		return "", fmt.Errorf("%q names no port", rawURL)
	}
	return u.Host, nil
}

// Via returns rawURL with its host:port replaced by addr: the same server,
// reached through a proxy.
func Via(rawURL, addr string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%q is not a URL with a host", rawURL)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", fmt.Errorf("proxy address %q: %w", addr, err)
	}
	u.Host = addr
	return u.String(), nil
}
