package broker

import (
	"cmp"
	"context"
	"fmt"
	"time"

	wnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
)

// natsBatchLinger is how long a batch waits for one more message once it has
// its first. The server pushes what MaxAckPending lets out in one burst,
// back to back: on one host the gap between two messages of a burst is
// microseconds, across a network well under a millisecond. 5ms takes in a
// whole burst and adds at most 5ms to a batch that ends early; a slow
// trickle cannot hold a batch open longer than poll.
const natsBatchLinger = 5 * time.Millisecond

// natsBatchSource reads one consumer group's messages of one topic from NATS
// JetStream several at a time (CONSUMER_BATCH_SIZE > 1). It binds to the
// group's durable push consumer, <topic>_<group>, and joins its deliver
// group, as the per-message subscriber of the group does: both take their
// messages from the same durable, so the group's position is one whichever
// mode reads it. Provision creates the durable; this source only binds to
// it, so ending a subscription never deletes it.
//
// What is in flight: the server pushes up to the durable's MaxAckPending
// unacknowledged messages to the members of the group, each message to one
// member, and starts its AckWait clock when it sends it. A batch holds at
// most that many, so newNATSBatchSource raises MaxAckPending to the batch
// size when it is smaller. MaxAckPending is the group's, not a member's:
// two batch members of one group share it, and a per-message member of the
// group (during a switch of mode) may be pushed up to that many messages
// too, which it handles one at a time while their AckWait runs: keep the
// batch size x the per-message handler's time well under natsAckWait.
//
// What a crash repeats: a message is acked only after the handler settled
// it. A process that dies before that leaves its messages unacked; the
// server sends them again, to any member, when their AckWait ends, and the
// guards answer already_applied for what had been applied.
//
// What order holds: messages come in the stream's order. A nak'd message
// goes to the consumer's redelivery queue, which the server serves, in the
// order of the naks, before any message it has not sent yet; messages it
// has already sent (in flight to any member) are not called back. So when
// a batch does not settle in full, the source naks the unsettled ones and
// then every message waiting in its buffer behind them, before it acks the
// settled: for a lone member the next batch begins where this one stopped
// (but for a message published in that instant). With several members no
// order holds across them, as with the per-message subscriber, which naks
// a failed message while up to MaxAckPending-1 later ones are already out.
// The guards do not depend on it; BatchLoop's "none is settled past an
// unsettled one" holds within a batch.
type natsBatchSource struct {
	url     string
	stream  string // the (prefixed) topic: stream and subject
	durable string
	size    int
}

// newNATSBatchSource provisions topic for group (js is the broker's
// connection), raises the durable's MaxAckPending to size when it is
// smaller (it never lowers it: another member may read bigger batches),
// and returns a source that reads size messages at a time on its own
// connection to url.
func newNATSBatchSource(js nats.JetStreamManager, url, topic, group string, size int) (*natsBatchSource, error) {
	if err := provisionNATS(js, topic, group); err != nil {
		return nil, err
	}
	durable := natsDurableName(group, topic)
	info, err := js.ConsumerInfo(topic, durable)
	if err != nil {
		return nil, fmt.Errorf("read durable consumer %s on stream %s: %w", durable, topic, err)
	}
	if cfg := info.Config; cfg.MaxAckPending >= 0 && cfg.MaxAckPending < size { // -1: no limit
		cfg.MaxAckPending = size
		if _, err := js.UpdateConsumer(topic, &cfg); err != nil {
			return nil, fmt.Errorf("raise MaxAckPending of %s to the batch size %d: %w", durable, size, err)
		}
	}
	return &natsBatchSource{url: url, stream: topic, durable: durable, size: size}, nil
}

// Loop reads batches and hands them to handle until ctx ends (see
// BatchSource). A read waits up to poll for its first message, so an empty
// read has waited already. The connection reconnects by itself
// (natsConnect) and the subscription survives that; a connection, a
// subscription or an ack that fails (the server unreachable at start, the
// durable gone, an AckSync unanswered during an outage) is reported to
// failed, and Loop closes its connection and subscribes again on a new one
// after backoff (doubling to 2s). Nothing is lost: what it had not acked
// the server sends again after AckWait, and the guards absorb the repeat.
// A batch in flight when ctx ends is finished and acked, then the
// subscription ends, and the messages waiting in its buffer are nak'd so
// that they come again at once.
func (s *natsBatchSource) Loop(ctx context.Context, poll, backoff time.Duration, handle func(msgs []*message.Message) (done int), failed func(error)) {
	poll = cmp.Or(poll, 100*time.Millisecond)
	var sub *natsBatchSub
	defer func() { sub.close() }()
	readLoop(ctx, 0, backoff, // an empty read has waited poll
		func() (int, int, error) {
			if sub == nil {
				var err error
				if sub, err = s.subscribe(); err != nil {
					return 0, 0, err
				}
			}
			return sub.read(ctx, s.size, poll, handle)
		},
		func(err error) {
			failed(err)
			sub.close() // the next read subscribes again
			sub = nil
		}, nil)
}

// natsBatchSub is one connection's subscription to the durable.
type natsBatchSub struct {
	nc  *nats.Conn
	sub *nats.Subscription
	// msgs receives what the server pushes, in delivery order. Its room is
	// a sync subscription's (nats.DefaultMaxChanLen): more than any
	// MaxAckPending this source sets, so nats.go never drops a message.
	msgs chan *nats.Msg
}

// subscribe connects and binds to the durable, on its deliver group.
func (s *natsBatchSource) subscribe() (*natsBatchSub, error) {
	nc, err := natsConnect(s.url)
	if err != nil {
		return nil, err
	}
	js, err := nc.JetStream()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("use JetStream: %w", err)
	}
	msgs := make(chan *nats.Msg, nats.DefaultMaxChanLen)
	// Bind: the durable must exist, nats.go neither creates nor deletes it.
	// ManualAck: nothing is acked unless the source acks it.
	sub, err := js.ChanQueueSubscribe(s.stream, s.durable, msgs, nats.Bind(s.stream, s.durable), nats.ManualAck())
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bind to durable consumer %s on stream %s: %w", s.durable, s.stream, err)
	}
	return &natsBatchSub{nc: nc, sub: sub, msgs: msgs}, nil
}

// read collects up to size messages (the first within poll, the next
// within natsBatchLinger of each other, all within poll of the first),
// hands them to handle, acks the first done and naks the rest, with what
// waits behind them. It returns how many were read and how many settled.
func (b *natsBatchSub) read(ctx context.Context, size int, poll time.Duration, handle func(msgs []*message.Message) (done int)) (read, done int, err error) {
	var batch []*nats.Msg
	select {
	case m := <-b.msgs:
		batch = append(batch, m)
	case <-ctx.Done():
		return 0, 0, nil
	case <-time.After(poll):
		return 0, 0, nil
	}
	end := time.After(poll)
	linger := time.NewTimer(natsBatchLinger)
	defer linger.Stop()
collect:
	for len(batch) < size {
		select {
		case m := <-b.msgs:
			batch = append(batch, m)
			linger.Reset(natsBatchLinger)
		case <-linger.C:
			break collect
		case <-end:
			break collect
		}
	}
	msgs := make([]*message.Message, len(batch))
	for i, m := range batch {
		// watermill-nats's own unmarshaler, as the per-message subscriber's:
		// the same UUID and metadata (trace context, order_id).
		if msgs[i], err = (&wnats.NATSMarshaler{}).Unmarshal(m); err != nil {
			b.nakFrom(batch) // as the subscriber, never settle it; but say so
			return 0, 0, fmt.Errorf("read %s: %w", m.Subject, err)
		}
	}
	// Once handed out, a batch is finished and acked even if ctx ends.
	done = min(max(handle(msgs), 0), len(batch))
	if done < len(batch) {
		// Nak before the acks: an ack frees a slot of MaxAckPending, and a
		// slot freed while the rest are not yet nak'd would let the server
		// push a later message ahead of them.
		b.nakFrom(batch[done:])
	}
	if err := ackSettled(batch[:done]); err != nil {
		return 0, 0, err
	}
	return len(batch), done, nil
}

// ackSettled acks the settled messages, all but the last without waiting
// and the last with AckSync: one round trip per batch. The server applies
// one connection's acks to a consumer in the order it reads them, so its
// answer to the last means it has applied them all before the next batch.
// Measured on one host (nats-server 2.9, 500 acks): AckSync on each took
// 48ms, a round trip per message; acks and a Flush 1.4ms, but the consumer
// still showed 500 pending right after (the server had read the acks, not
// applied them); acks and AckSync on the last 1.5ms, 0 pending. An ack lost
// in a failure costs a redelivery, which the guards absorb.
func ackSettled(settled []*nats.Msg) error {
	for i, m := range settled {
		ack := m.Ack
		if i == len(settled)-1 {
			ack = m.AckSync
		}
		if err := ack(); err != nil {
			return fmt.Errorf("ack %d settled message(s): %w", len(settled), err)
		}
	}
	return nil
}

// nakFrom naks unsettled, then every message waiting in the buffer behind
// them, in order, so they come again in that order (see natsBatchSource).
// It flushes first: the server answers after what it had already pushed,
// so those messages are in the buffer, not on the wire. A nak lost in a
// failure only means the message comes again after its AckWait instead
// of at once.
func (b *natsBatchSub) nakFrom(unsettled []*nats.Msg) {
	_ = b.nc.Flush()
	for _, m := range unsettled {
		_ = m.Nak()
	}
	for {
		select {
		case m := <-b.msgs:
			_ = m.Nak()
		default:
			return
		}
	}
}

// close ends the subscription (the durable stays: it was bound, not
// created), naks what was pushed and not handed out, so it comes again at
// once, and closes the connection. It unsubscribes first, or the server
// would push the nak'd messages straight back; what was on the wire then
// is dropped by nats.go and comes again after AckWait.
func (b *natsBatchSub) close() {
	if b == nil {
		return
	}
	_ = b.sub.Unsubscribe() // on error too, closing the connection ends it
	b.nakFrom(nil)
	_ = b.nc.Flush()
	b.nc.Close()
}
