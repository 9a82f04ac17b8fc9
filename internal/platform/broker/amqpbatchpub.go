package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// amqpConfirmTimeout bounds how long a Publish call waits for the confirms
// of its messages. RabbitMQ confirms a persistent message once it is on
// disk, which takes milliseconds even for a few hundred of them; a broker
// that has not confirmed within 30 s is stuck (a disk or memory alarm
// blocks publishers) and the caller is better off retrying later than
// holding its lane. A dead TCP connection is found sooner, by amqp091's
// heartbeats (10 s), which close the channel.
const amqpConfirmTimeout = 30 * time.Second

// amqpBatchPublisher publishes many messages per call to RabbitMQ with
// pipelined publisher confirms (Broker.BatchPublisher on amqp). watermill-
// amqp's publisher waits for each message's confirm before it sends the
// next, so a call of N persistent messages costs N round trips, each with
// a disk write; this one sends all N, then waits for their confirms, which
// RabbitMQ writes and acknowledges together.
//
// On the wire it does what watermill-amqp's publisher does with
// NewDurablePubSubConfig (see newAMQP): exchange = topic, declared durable
// fanout, routing key "", mandatory off, each message marshalled by
// amqp.DefaultMarshaler (persistent, the UUID in _watermill_message_uuid,
// the metadata in the other headers), so consumers cannot tell the two apart.
//
// A call returns nil only when the broker acked every message. A nack, a
// channel or connection closed during the call, or amqpConfirmTimeout
// passing returns an error naming how many were confirmed; the caller (the
// outbox relay) publishes the call's messages again later, some of them a
// second time. That is at least once, the relay's guarantee anyway, and the
// consumers' guards answer already_applied for the copies.
//
// It owns one connection and one confirm-mode channel, reused across calls
// and shared by concurrent calls (amqp091 serialises publishes on a
// channel; confirms are matched by delivery tag): opening a channel, putting
// it in confirm mode and declaring the exchange are three round trips that
// would otherwise come with every call. There is no pool to lose channels
// from (watermill-amqp's failure, see newAMQP): each call checks the channel
// and the connection, and opens a new channel, or dials a new connection,
// when the old one is closed or a write to its socket failed; a call that
// cannot open one fails and the next tries again. A call that timed out
// drops its channel too, as it may be stuck; a call sharing a channel that
// dies fails with it, and is retried like any other. Each exchange is
// declared once per channel (idempotent, as Provision and watermill-amqp
// declare it, but a round trip), so a new channel declares it again.
//
// The timeout covers the wait for confirms, not the writes: amqp091's
// publish takes no deadline, so on a connection RabbitMQ has blocked (an
// alarm) a call can stay in a write until the alarm clears.
type amqpBatchPublisher struct {
	url string

	mu     sync.Mutex // guards the fields below; held while opening and declaring
	conn   *amqp091.Connection
	ch     *confirmChannel
	closed bool
}

// confirmChannel is a channel in confirm mode and what was declared on it.
type confirmChannel struct {
	*amqp091.Channel
	conn        *amqp091.Connection // the channel's
	closeNotice chan *amqp091.Error // why the broker closed it, once closed
	declared    map[string]bool     // exchanges
}

// closeReason says why ch is closed, if the broker said so.
func (ch *confirmChannel) closeReason() string {
	select {
	case e, ok := <-ch.closeNotice:
		if ok && e != nil {
			return ": " + e.Error()
		}
	default:
	}
	return ""
}

// newAMQPBatchPublisher dials RabbitMQ at url.
func newAMQPBatchPublisher(url string) (*amqpBatchPublisher, error) {
	conn, err := amqp091.Dial(url)
	if err != nil {
		return nil, err
	}
	return &amqpBatchPublisher{url: url, conn: conn}, nil
}

// Publish publishes msgs to topic's exchange and returns once the broker
// has confirmed all of them, or with an error (see amqpBatchPublisher).
func (p *amqpBatchPublisher) Publish(topic string, msgs ...*message.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	ch, err := p.channel(topic)
	if err != nil {
		return fmt.Errorf("publish %d message(s) to %s: %w", len(msgs), topic, err)
	}
	confirms := make([]*amqp091.DeferredConfirmation, 0, len(msgs))
	var sendErr error
	for _, msg := range msgs {
		pub, err := (amqp.DefaultMarshaler{}).Marshal(msg)
		if err != nil {
			sendErr = fmt.Errorf("marshal message %s: %w", msg.UUID, err)
			break
		}
		dc, err := ch.PublishWithDeferredConfirmWithContext(msg.Context(), topic, "", false, false, pub)
		if err != nil {
			sendErr = fmt.Errorf("send message %s: %w", msg.UUID, err)
			p.drop(ch, socketError(err)) // a failed write leaves the channel unusable
			break
		}
		confirms = append(confirms, dc)
	}
	acked, waitErr := p.wait(ch, confirms)
	if err := errors.Join(sendErr, waitErr); err != nil {
		return fmt.Errorf("publish %d message(s) to %s: %d confirmed: %w", len(msgs), topic, acked, err)
	}
	return nil
}

// wait waits for confirms and returns how many of them were acks, and an
// error unless all were. When they do not come within amqpConfirmTimeout
// the channel is dropped.
func (p *amqpBatchPublisher) wait(ch *confirmChannel, confirms []*amqp091.DeferredConfirmation) (acked int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), amqpConfirmTimeout)
	defer cancel()
	nacked := 0
	for _, dc := range confirms {
		ok, err := dc.WaitContext(ctx)
		if err != nil {
			p.drop(ch, false)
			return acked, fmt.Errorf("no confirm within %v (channel dropped): %w", amqpConfirmTimeout, err)
		}
		if ok {
			acked++
		} else {
			nacked++
		}
	}
	if nacked > 0 {
		// A closed channel nacks what it had not confirmed (amqp091).
		if ch.IsClosed() {
			return acked, fmt.Errorf("%d not confirmed: channel closed%s", nacked, ch.closeReason())
		}
		return acked, fmt.Errorf("%d nacked by the broker", nacked)
	}
	return acked, nil
}

// channel returns the open channel, with topic's exchange declared on it,
// opening a new channel (and dialling a new connection) when the last one
// is closed.
func (p *amqpBatchPublisher) channel(topic string) (*confirmChannel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("publisher closed")
	}
	if p.ch == nil || p.ch.IsClosed() {
		if err := p.open(); err != nil {
			return nil, err
		}
	}
	if !p.ch.declared[topic] {
		// watermill-amqp's DefaultTopologyBuilder.ExchangeDeclare with
		// NewDurablePubSubConfig's ExchangeConfig, as Provision declares it.
		if err := p.ch.ExchangeDeclare(topic, "fanout", true, false, false, false, nil); err != nil {
			// A refusal closes the channel, a socket error the connection:
			// the next call opens new ones.
			if socketError(err) {
				p.abandonConn()
			}
			return nil, fmt.Errorf("declare exchange: %w", err)
		}
		p.ch.declared[topic] = true
	}
	return p.ch, nil
}

// open opens a channel in confirm mode, on a new connection if the last
// one is closed. The caller holds mu.
func (p *amqpBatchPublisher) open() error {
	p.ch = nil
	if p.conn == nil || p.conn.IsClosed() {
		conn, err := amqp091.Dial(p.url)
		if err != nil {
			return fmt.Errorf("reconnect: %w", err)
		}
		p.conn = conn
	}
	ch, err := p.conn.Channel()
	if err != nil {
		if socketError(err) {
			p.abandonConn()
		}
		return fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		if socketError(err) {
			p.abandonConn()
		}
		_ = ch.Close()
		return fmt.Errorf("put channel in confirm mode: %w", err)
	}
	p.ch = &confirmChannel{Channel: ch, conn: p.conn, closeNotice: ch.NotifyClose(make(chan *amqp091.Error, 1)), declared: map[string]bool{}}
	return nil
}

// drop makes the next call open a new channel if ch is still the current
// one (and dial a new connection, with conn), and closes ch without
// waiting: a stuck broker may never answer the close either.
func (p *amqpBatchPublisher) drop(ch *confirmChannel, conn bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == ch {
		p.ch = nil
	}
	if conn && p.conn == ch.conn {
		p.abandonConn()
	}
	go func() { _ = ch.Close() }()
}

// abandonConn makes the next call dial a new connection, and closes the
// current one without waiting. The caller holds mu.
func (p *amqpBatchPublisher) abandonConn() {
	if conn := p.conn; conn != nil {
		go func() { _ = conn.Close() }()
	}
	p.conn, p.ch = nil, nil
}

// socketError reports whether err came from the socket rather than from
// RabbitMQ (an *amqp091.Error): the connection is gone then, even if
// amqp091 has not noticed yet, and a new one must be dialled.
func socketError(err error) bool {
	var amqpErr *amqp091.Error
	return !errors.As(err, &amqpErr)
}

// Close closes the connection; calls after it fail.
func (p *amqpBatchPublisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.conn == nil || p.conn.IsClosed() {
		return nil
	}
	if err := p.conn.Close(); err != nil && !errors.Is(err, amqp091.ErrClosed) {
		return fmt.Errorf("close RabbitMQ batch publisher connection: %w", err)
	}
	return nil
}
