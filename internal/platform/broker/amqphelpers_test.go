package broker_test

// Helpers of the RabbitMQ tests: a broker connection, a queue's state, and a
// TCP proxy that cuts one connection to the server on demand.

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// connectAMQP connects an amqp Broker to RabbitMQ at rawURL.
func connectAMQP(t *testing.T, rawURL string) *broker.Broker {
	t.Helper()
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerAMQP, AMQPURL: rawURL}, nil, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close amqp broker: %v", err)
		}
	})
	return b
}

// amqpQueueState reports a queue's ready messages and its consumers. With
// no consumer, no message is unacknowledged: ready is all the queue holds.
func amqpQueueState(t *testing.T, queue string) (ready, consumers int) {
	t.Helper()
	q, err := amqpChannel(t).QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect queue %s: %v", queue, err)
	}
	return q.Messages, q.Consumers
}

// amqpChannel opens a channel on a connection of its own to RabbitMQ,
// closed when the test ends.
func amqpChannel(t *testing.T) *amqp091.Channel {
	t.Helper()
	conn, err := amqp091.Dial(amqpURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// tcpProxy forwards connections to RabbitMQ until cut, which resets every
// open one at once, as a crash or a network failure does, except those
// spared: the Broker's publisher and subscriber connections, whose
// reconnecting is watermill-amqp's (and races with Close under -race).
type tcpProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	open   []net.Conn
	spared int
	ncuts  int
}

func startTCPProxy(t *testing.T) *tcpProxy {
	t.Helper()
	u, err := url.Parse(amqpURL())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			up, err := net.Dial("tcp", u.Host)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.open = append(p.open, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(func() { // after the Broker's Close
		ln.Close()
		p.spare0()
		p.cut()
	})
	return p
}

// url is amqpURL through the proxy.
func (p *tcpProxy) url() string {
	u, _ := url.Parse(amqpURL())
	u.Host = p.ln.Addr().String()
	return u.String()
}

// spare0 spares none.
func (p *tcpProxy) spare0() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spared = 0
}

// spare keeps the connections open now from the cuts.
func (p *tcpProxy) spare() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spared = len(p.open)
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.open[p.spared:] {
		_ = c.(*net.TCPConn).SetLinger(0) // RST, not a polite FIN
		_ = c.Close()
	}
	p.open = p.open[:p.spared]
	p.ncuts++
}

func (p *tcpProxy) cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ncuts
}

// cutLast resets the connection accepted last, alone.
func (p *tcpProxy) cutLast() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.open[len(p.open)-2:] { // the client's side and the upstream
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
	}
	p.open = p.open[:len(p.open)-2]
	p.ncuts++
}
