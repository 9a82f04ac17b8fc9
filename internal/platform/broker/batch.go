package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// BatchSource hands one consumer group's messages of one topic out several
// at a time, for a handler that applies a whole batch at once
// (CONSUMER_BATCH_SIZE > 1). Each broker has its own: BatchReader on
// PostgreSQL (one read transaction over watermill-sql's tables),
// amqpBatchSource on RabbitMQ (a channel with prefetch N over the group's
// queue), natsBatchSource on NATS JetStream (the group's durable consumer,
// N messages in flight). They read what the per-message subscriber of the
// same group reads, so a group's position is one whichever mode reads it.
type BatchSource interface {
	// Loop reads batches and hands them to handle until ctx ends. handle
	// returns how many of the messages, from the first, are settled
	// (applied, or put in the poison queue): those are acked, the rest come
	// again, first, in the next batch. After an empty read Loop waits poll
	// (default 100ms); after a failed read (reported to failed) or a batch
	// that did not settle in full, backoff (default 100ms, doubling to 2s).
	// A batch in flight when ctx ends is finished and its acks sent:
	// stopping never cuts one in half.
	Loop(ctx context.Context, poll, backoff time.Duration, handle func(msgs []*message.Message) (done int), failed func(error))
}

// ErrNoBatchReader: this broker has no BatchSource.
var ErrNoBatchReader = errors.New("this broker has no batch reader: set CONSUMER_BATCH_SIZE=1")

// BatchReader returns a batch source of topic (under BROKER_PREFIX) for
// group, size messages at a time.
func (b *Broker) BatchReader(topic, group string, size int) (BatchSource, error) {
	if b.batchSource == nil {
		return nil, fmt.Errorf("%s: %w", b.Name, ErrNoBatchReader)
	}
	return b.batchSource(b.prefix+topic, group, max(size, 1))
}

// readLoop is the loop of every BatchSource's Loop: it calls read until ctx
// ends. After a failed read it calls failed (which reports the error and
// drops what the failure broke), and after a batch not settled in full it
// calls partial (nil: nothing to do); after either it waits backoff
// (default 100ms), doubling to 2s, back to the start after a batch settled
// in full. After an empty read it waits emptyWait (0: the read itself
// waited for the first message).
func readLoop(ctx context.Context, emptyWait, backoff time.Duration, read func() (n, done int, err error), failed func(error), partial func()) {
	first := cmp.Or(backoff, 100*time.Millisecond)
	backoff = first
	for ctx.Err() == nil {
		n, done, err := read()
		var wait time.Duration
		switch {
		case err != nil:
			failed(err)
			wait, backoff = backoff, min(backoff*2, 2*time.Second)
		case done < n:
			if partial != nil {
				partial()
			}
			wait, backoff = backoff, min(backoff*2, 2*time.Second)
		case n == 0:
			wait = emptyWait
		default:
			backoff = first
			continue
		}
		if wait == 0 {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}
