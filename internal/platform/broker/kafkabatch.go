package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// kafkaBatchLinger is how long a batch waits for one more record once it
// has some, as natsBatchLinger: the client fetches a partition's records in
// one response, so what was published together arrives together.
const kafkaBatchLinger = 5 * time.Millisecond

// kafkaBatchSource reads one consumer group's records of one topic several
// at a time (CONSUMER_BATCH_SIZE > 1). It joins the same group as the
// per-message subscriber of the group, <topic>_<group>, so the group's
// committed offsets are its position whichever mode reads it.
//
// What a batch is: up to size records polled from the partitions this
// member owns, in each partition's order (records of several partitions
// may interleave). handle settles a prefix of it; the source commits the
// offsets of that prefix (one synchronous commit per batch) and seeks each
// partition of the rest back to its first unsettled record, which the next
// poll reads again, first in that partition.
//
// What a crash repeats: everything after the last commit of each
// partition. A process that dies after a batch's effects and before its
// commit has the whole batch read again by the partition's next owner
// (after kafkaSessionTimeout, when the group gives up on it), and the
// guards answer already_applied.
//
// Rebalances: a rebalance waits while a batch is in hand
// (BlockRebalanceOnPoll) and runs between two batches, so a batch is
// committed by the member that read it, never after its partitions moved.
// A rebalance that waits longer than kafkaRebalanceTimeout (a batch slower
// than that) drops this member from the group: its commit then fails, is
// reported, and the batch is read again by the new owner.
type kafkaBatchSource struct {
	brokers []string
	topic   string // the (prefixed) topic
	group   string // the Kafka group: KafkaGroup(topic, consumer group)
	size    int
	faults  *fault.Set
	// positions, when set, keeps the group's position in PostgreSQL with
	// the batch's effects (CONSUMER_POSITION=with-effects, kafkaPositions).
	positions *kafkaPositions
}

// Loop reads batches and hands them to handle until ctx ends (see
// BatchSource). A read waits up to poll for its first record, so an empty
// read has waited already. A commit that fails is reported to failed, and
// Loop leaves the group (closing its client) and joins again after backoff:
// what it had not committed is read again. A batch in flight when ctx ends
// is finished and committed, then the member leaves the group.
func (s *kafkaBatchSource) Loop(ctx context.Context, poll, backoff time.Duration, handle func(msgs []*message.Message) (done int), failed func(error)) {
	poll = cmp.Or(poll, 100*time.Millisecond)
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			leaveAndClose(cl)
		}
	}()
	readLoop(ctx, 0, backoff, // an empty read has waited poll
		func() (int, int, error) {
			if cl == nil {
				var err error
				var seek []kgo.Opt
				if s.positions != nil {
					seek = append(seek, s.positions.seekOnAssign(s.group))
				}
				if cl, err = kafkaGroupClient(s.brokers, s.topic, s.group, nil, seek...); err != nil {
					return 0, 0, err
				}
			}
			if s.positions != nil {
				return s.positions.read(ctx, s, cl, poll, handle)
			}
			return s.read(ctx, cl, poll, handle)
		},
		func(err error) {
			failed(err)
			if cl != nil {
				leaveAndClose(cl) // the next read joins again
				cl = nil
			}
		}, nil)
}

// read polls up to size records (the first within poll, more while they
// come within kafkaBatchLinger), hands them to handle, seeks back what it
// did not settle and commits what it did. It returns how many were read
// and how many settled.
func (s *kafkaBatchSource) read(ctx context.Context, cl *kgo.Client, poll time.Duration, handle func(msgs []*message.Message) (done int)) (read, done int, err error) {
	defer cl.AllowRebalance() // after the commit: a rebalance runs between batches
	records, err := pollBatch(ctx, cl, s.size, poll)
	if err != nil || len(records) == 0 {
		return 0, 0, err
	}
	msgs := make([]*message.Message, len(records))
	for i, r := range records {
		msgs[i] = kafkaMessage(r)
	}
	// Once handed out, a batch is finished and committed even if ctx ends.
	done = min(max(handle(msgs), 0), len(records))
	if done < len(records) {
		rewind(cl, records[done:])
	}
	if done == 0 {
		return len(records), 0, nil
	}
	if err := s.faults.Hit(FaultBeforeOffsetCommit); err != nil {
		return 0, 0, fmt.Errorf("commit the offsets of %d settled record(s) of %s: %w", done, s.group, err)
	}
	commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kafkaTimeout)
	defer cancel()
	if err := cl.CommitRecords(commitCtx, records[:done]...); err != nil {
		return 0, 0, fmt.Errorf("commit the offsets of %d settled record(s) of %s: %w", done, s.group, err)
	}
	return len(records), done, nil
}

// pollBatch polls up to size records: the first poll waits up to poll,
// the next ones kafkaBatchLinger each. Errors of a poll that ended on its
// own deadline, or on ctx, are not errors; a fetch error with no record
// is (the client retries most by itself and reports only what it gave up
// on).
func pollBatch(ctx context.Context, cl *kgo.Client, size int, poll time.Duration) ([]*kgo.Record, error) {
	var records []*kgo.Record
	wait := poll
	for len(records) < size {
		pollCtx, cancel := context.WithTimeout(ctx, wait)
		fetches := cl.PollRecords(pollCtx, size-len(records))
		cancel()
		if fetches.IsClientClosed() {
			return nil, kgo.ErrClientClosed
		}
		got := fetches.Records()
		var fetchErr error
		fetches.EachError(func(topic string, partition int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fetchErr = cmp.Or(fetchErr, fmt.Errorf("fetch %s partition %d: %w", topic, partition, err))
			}
		})
		if len(got) == 0 {
			if len(records) == 0 && fetchErr != nil {
				return nil, fetchErr
			}
			break
		}
		records = append(records, got...)
		wait = kafkaBatchLinger
	}
	return records, nil
}
