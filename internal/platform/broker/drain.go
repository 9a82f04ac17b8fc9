package broker

import (
	"context"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// NewDraining wraps sub so that a graceful shutdown finishes and acks the
// messages already handed out before the broker subscription closes.
//
// Without it, a SIGTERM during a handler loses the ack: watermill's router
// cancels the subscription's context and closes the subscriber at once, and
// the in-flight message is dropped unacked (on watermill-sql, with the acks of
// its whole batch, written at the batch's end). Its effects committed, so every
// deploy would redeliver them: the guards would absorb that, but a clean
// shutdown should not need them to. On Close it stops handing out, waits up to
// timeout for acks or nacks, then closes the subscription (committing the
// acks) and, last, the channel the router waits for.
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

// Subscribe subscribes with a context the router's shutdown does not cancel;
// Close cancels it after the drain, and cancelling ctx starts Close.
func (d *drainingSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	subCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	in, err := d.Subscriber.Subscribe(subCtx, topic)
	if err != nil {
		cancel()
		return nil, err
	}
	ch := make(chan *message.Message)
	out := &output{ch: ch, close: sync.OnceFunc(func() { close(ch) })}
	d.mu.Lock()
	d.cancels = append(d.cancels, cancel)
	d.outs = append(d.outs, out)
	d.mu.Unlock()
	d.forwards.Go(func() { d.forward(in, out) })
	go func() {
		select {
		case <-ctx.Done():
			_ = d.Close()
		case <-d.closed:
		}
	}()
	return out.ch, nil
}

// output is one subscription's channel to the router, closed once, by the
// broker ending it or by Close.
type output struct {
	ch    chan *message.Message
	close func()
}

// forward hands messages to the router until Close, each in flight until
// acked or nacked.
func (d *drainingSubscriber) forward(in <-chan *message.Message, out *output) {
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
			d.mu.Unlock() // never handed out: the broker redelivers it
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

// Close drains, then closes the subscription and the output channels; it is
// safe to call more than once.
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
