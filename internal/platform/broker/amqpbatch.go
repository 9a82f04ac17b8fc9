package broker

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// amqpLinger is how long a read waits, after its first delivery, for the
// rest of a batch. With prefetch N RabbitMQ writes up to N deliveries back
// to back as soon as the window opens: on one host or one LAN hop they land
// well under a millisecond apart, so 2ms gives a busy queue full batches,
// while a quiet queue pays at most 2ms per message, less than the one
// database transaction a batch handler runs.
const amqpLinger = 2 * time.Millisecond

// amqpBatchSource reads one consumer group's queue of one topic on RabbitMQ
// several messages at a time (CONSUMER_BATCH_SIZE > 1). It reads the queue
// the group's per-message subscriber reads, <topic>_<group> (amqpConfig),
// declared and bound by Provision, so both modes share one queue.
//
// It has its own connection and one channel with prefetch Size and manual
// ack: what is in flight is at most Size unacknowledged deliveries, the
// oldest of the queue. A read waits up to poll for the first delivery,
// then takes what arrives within amqpLinger, up to Size. After the handler
// settled the first done, one ack (multiple) on the last of them removes
// them from the queue, and one nack (multiple, requeue) puts the rest back.
// A crash, or a connection lost before the ack, repeats the whole batch:
// RabbitMQ requeues every unacknowledged delivery of a dead channel, marked
// redelivered, and the guards answer already_applied for what had been
// applied.
//
// Order: one reader gets the group's messages in queue order, within a
// batch and across batches. A requeued message goes back to its original
// place in the queue, if possible; with several consumers acking around it
// RabbitMQ puts it nearer the head instead
// (https://www.rabbitmq.com/docs/confirms#consumer-nacks-requeue). So the
// order holds with one worker per group; several workers on one queue
// interleave their batches, and a batch one of them hands back can be
// delivered to another after a later one.
//
// A source is read by one Loop at a time; it dials when Loop starts and
// closes its connection when Loop returns, so Broker.Close has nothing of
// it to close.
type amqpBatchSource struct {
	url   string
	queue string
	size  int

	conn       *amqp091.Connection
	ch         *amqp091.Channel
	deliveries <-chan amqp091.Delivery
	closed     chan *amqp091.Error // the channel's close notice
}

// newAMQPBatchSource returns the batch source of group's queue of topic on
// the RabbitMQ at url, size messages a read.
func newAMQPBatchSource(url, topic, group string, size int) *amqpBatchSource {
	return &amqpBatchSource{url: url, queue: amqpConfig(url, group).Queue.GenerateName(topic), size: max(size, 1)}
}

// Loop reads batches and hands them to handle until ctx ends (see
// BatchSource). An empty read has already waited poll for a delivery, so
// the next begins at once. A failed read (the connection or channel lost,
// reported to failed) and a batch not settled in full wait backoff
// (default 100ms, doubling to 2s), then read on a new channel (and a new
// connection after a failure). A batch in flight when ctx ends is finished
// and acked; then the connection closes, and RabbitMQ requeues whatever
// had been delivered past the batch.
func (s *amqpBatchSource) Loop(ctx context.Context, poll, backoff time.Duration, handle func(msgs []*message.Message) (done int), failed func(error)) {
	poll = cmp.Or(poll, 100*time.Millisecond)
	defer s.close()
	readLoop(ctx, 0, backoff, // an empty read has waited poll
		func() (int, int, error) { return s.read(ctx, poll, handle) },
		func(err error) {
			failed(err)
			s.close() // the next read redials
		},
		s.closeChannel) // see read
}

// read collects one batch, hands it to handle and settles it on RabbitMQ:
// it returns how many were read (0: none within poll, or ctx ended) and
// how many handle settled.
func (s *amqpBatchSource) read(ctx context.Context, poll time.Duration, handle func(msgs []*message.Message) (done int)) (read, done int, err error) {
	if err := s.open(); err != nil {
		return 0, 0, err
	}
	batch, err := s.collect(ctx, poll)
	if err != nil || len(batch) == 0 {
		return 0, 0, err
	}
	msgs := make([]*message.Message, len(batch))
	for i, d := range batch {
		// The per-message subscriber's own unmarshalling: the same UUID,
		// the same metadata (trace context, order_id, redelivered).
		m, err := (amqp.DefaultMarshaler{}).Unmarshal(d)
		if err != nil {
			// A delivery with headers watermill cannot read: as the
			// subscriber does, hand it back and report it (the failed
			// read closes the channel, which requeues the batch).
			return 0, 0, fmt.Errorf("read %s: delivery %d: %w", s.queue, d.DeliveryTag, err)
		}
		if d.Redelivered {
			m.Metadata.Set(amqp.MetadataRedeliveredKey, "true")
		}
		msgs[i] = m
	}
	done = min(max(handle(msgs), 0), len(batch))
	// The batch is the oldest unacknowledged deliveries of the channel, in
	// delivery-tag order: multiple=true on the last settled acks exactly
	// the settled, and on the last of the batch nacks exactly the rest.
	// Acks are frames on the channel, bound to no context: a shutdown
	// during handle does not stop them.
	if done > 0 {
		if err := batch[done-1].Ack(true); err != nil {
			return len(batch), 0, fmt.Errorf("ack %d message(s) of %s: %w", done, s.queue, err)
		}
	}
	if done < len(batch) {
		// Requeued, they go back to the head, where they were. Deliveries
		// that arrived past the batch are not covered: Loop closes the
		// channel, so they go back behind them, and the order holds.
		if err := batch[len(batch)-1].Nack(true, true); err != nil {
			return len(batch), done, fmt.Errorf("requeue %d message(s) of %s: %w", len(batch)-done, s.queue, err)
		}
	}
	return len(batch), done, nil
}

// collect waits up to poll for a first delivery, then takes what arrives
// within amqpLinger of it, up to Size, in delivery order.
func (s *amqpBatchSource) collect(ctx context.Context, poll time.Duration) ([]amqp091.Delivery, error) {
	wait := time.NewTimer(poll)
	defer wait.Stop()
	var batch []amqp091.Delivery
	for len(batch) < s.size {
		select {
		case d, ok := <-s.deliveries:
			if !ok {
				return nil, s.lost() // nothing acked: all of it comes again
			}
			if len(batch) == 0 {
				wait.Reset(amqpLinger)
			}
			batch = append(batch, d)
		case <-wait.C:
			return batch, nil
		case <-ctx.Done():
			if len(batch) == 0 {
				return nil, nil
			}
			return batch, nil // delivered already: hand it out, then stop
		}
	}
	return batch, nil
}

// lost says why the deliveries stopped: the channel or connection closed, or
// RabbitMQ cancelled the consumer (the queue was deleted).
func (s *amqpBatchSource) lost() error {
	select {
	case e := <-s.closed:
		if e != nil {
			return fmt.Errorf("read %s: channel closed: %w", s.queue, e)
		}
	default:
	}
	return fmt.Errorf("read %s: deliveries stopped (channel closed or consumer cancelled)", s.queue)
}

// open dials the connection and opens the channel, if they are not open.
func (s *amqpBatchSource) open() error {
	if s.conn == nil || s.conn.IsClosed() {
		s.close()
		cfg := amqp091.Config{Properties: amqp091.NewConnectionProperties()}
		cfg.Properties.SetClientConnectionName("orderpaid batch " + s.queue)
		conn, err := amqp091.DialConfig(s.url, cfg)
		if err != nil {
			return fmt.Errorf("connect to RabbitMQ for %s: %w", s.queue, err)
		}
		s.conn = conn
	}
	if s.ch != nil {
		return nil
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return fmt.Errorf("open a channel for %s: %w", s.queue, err)
	}
	closed := ch.NotifyClose(make(chan *amqp091.Error, 1))
	if err := ch.Qos(s.size, 0, false); err != nil {
		_ = ch.Close()
		return fmt.Errorf("set prefetch %d on %s: %w", s.size, s.queue, err)
	}
	deliveries, err := ch.Consume(s.queue, "", false, false, false, false, nil)
	if err != nil {
		_ = ch.Close()
		return fmt.Errorf("consume %s: %w", s.queue, err)
	}
	s.ch, s.deliveries, s.closed = ch, deliveries, closed
	return nil
}

// closeChannel closes the channel: RabbitMQ requeues, in their places,
// the deliveries not yet acked.
func (s *amqpBatchSource) closeChannel() {
	if s.ch != nil {
		_ = s.ch.Close() // a channel already closed has nothing to requeue
	}
	s.ch, s.deliveries, s.closed = nil, nil, nil
}

// close closes the connection, and with it the channel: a connection that
// is down is given up at the deadline. Either way RabbitMQ requeues what
// was not acked.
func (s *amqpBatchSource) close() {
	if s.conn != nil {
		_ = s.conn.CloseDeadline(time.Now().Add(5 * time.Second)) // nothing to do about a failed close
	}
	s.conn, s.ch, s.deliveries, s.closed = nil, nil, nil, nil
}
