package broker

import (
	"context"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// NewDraining wraps sub so that a graceful shutdown finishes the messages
// already handed out, and acknowledges them, before the broker subscription
// closes. The worker's consumers and the outbox relay read through it.
//
// Without it, a SIGTERM during a handler loses that message's ack: watermill's
// router (and the forwarder, which is a router) cancels the subscription's
// context and closes the subscriber as soon as it starts closing, and every
// subscriber here (watermill-sql, amqp, nats) then drops the in-flight
// message unacknowledged. On watermill-sql the acks of a whole batch are one
// statement at its end, in the poll's transaction, so the cancelled context
// rolls back the acks of every message of the batch handled so far. The
// effects have committed, the acks have not, so the broker delivers them
// again after every deploy. The guards would absorb that repeat, but a clean
// shutdown should not need them to.
//
// On Close it stops handing out new messages, waits up to timeout for the
// ones handed out to be acked or nacked, and only then closes the broker
// subscription (which commits those acks). The output channel closes last, so
// the router, which waits for it, does not return before the acks are written.
func NewDraining(sub message.Subscriber, timeout time.Duration) message.Subscriber {
	return &drainingSubscriber{Subscriber: sub, timeout: timeout, stop: make(chan struct{}), closed: make(chan struct{})}
}

// drainingSubscriber is NewDraining's subscriber.
type drainingSubscriber struct {
	message.Subscriber
	timeout time.Duration

	mu       sync.Mutex
	closing  bool
	stop     chan struct{}
	inFlight sync.WaitGroup
	forwards sync.WaitGroup
	cancels  []context.CancelFunc
	outs     []*output
	closeErr error
	closed   chan struct{}
}

// Subscribe subscribes with a context that the router's shutdown does not
// cancel: handlers keep their database connections until they finish. Close
// cancels it, after the drain; cancelling ctx starts Close.
func (d *drainingSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	subCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	in, err := d.Subscriber.Subscribe(subCtx, topic)
	if err != nil {
		cancel()
		return nil, err
	}
	out := &output{ch: make(chan *message.Message)}
	d.mu.Lock()
	d.cancels = append(d.cancels, cancel)
	d.outs = append(d.outs, out)
	d.mu.Unlock()
	d.forwards.Add(1)
	go d.forward(in, out)
	// The router closes a subscription either by calling Close or by
	// cancelling ctx and waiting for the channel to close: both drain.
	go func() {
		select {
		case <-ctx.Done():
			_ = d.Close()
		case <-d.closed:
		}
	}()
	return out.ch, nil
}

// output is one subscription's channel to the router; it is closed once,
// by whichever comes first: the broker closing its channel, or Close.
type output struct {
	ch   chan *message.Message
	once sync.Once
}

func (o *output) close() { o.once.Do(func() { close(o.ch) }) }

// forward hands messages from the broker to the router until Close, counting
// each one as in flight until it is acked or nacked.
func (d *drainingSubscriber) forward(in <-chan *message.Message, out *output) {
	defer d.forwards.Done()
	for {
		var msg *message.Message
		select {
		case <-d.stop:
			return
		case m, ok := <-in:
			if !ok {
				out.close() // the broker ended the subscription: so does the router
				return
			}
			msg = m
		}
		d.mu.Lock()
		if d.closing {
			// Never handed out: the broker redelivers it.
			d.mu.Unlock()
			return
		}
		d.inFlight.Add(1)
		d.mu.Unlock()
		select {
		case out.ch <- msg:
			go func() {
				defer d.inFlight.Done()
				select {
				case <-msg.Acked():
				case <-msg.Nacked():
				}
			}()
		case <-d.stop:
			d.inFlight.Done()
			return
		}
	}
}

// Close drains, closes the broker subscription and then the output channels.
// It is safe to call more than once.
func (d *drainingSubscriber) Close() error {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		<-d.closed
		return d.closeErr
	}
	d.closing = true
	close(d.stop)
	d.mu.Unlock()

	drained := make(chan struct{})
	go func() { d.inFlight.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(d.timeout):
		// Left for redelivery; the cancel below fails their database calls.
	}
	// Close before cancelling: the broker writes the acks with this context.
	d.closeErr = d.Subscriber.Close()
	for _, cancel := range d.cancels {
		cancel()
	}
	d.forwards.Wait()
	for _, out := range d.outs {
		out.close()
	}
	close(d.closed)
	return d.closeErr
}
