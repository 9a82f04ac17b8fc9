package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// Settings of the Kafka subscriber.
const (
	// kafkaPollRecords is how many records the per-message subscriber
	// takes from the client at a time. It hands them out one by one; a
	// rebalance waits until they are all settled, or until the next one is
	// about to be handed out (see kafkaSubscriber).
	kafkaPollRecords = 16
	// kafkaNackResendSleep is the wait before a nacked record is fetched
	// again, as watermill-kafka's NackResendSleep.
	kafkaNackResendSleep = 100 * time.Millisecond
	// kafkaFetchMaxWait bounds a fetch's long poll (see kafkaGroupClient).
	kafkaFetchMaxWait = 500 * time.Millisecond
)

// kafkaSubscriber is the per-message subscriber of one consumer group. Each
// Subscribe joins the group <topic>_<group> (KafkaGroup) as a member with a
// client of its own, and hands its records out one at a time, in the order
// of each partition, waiting for each message's ack or nack:
//
//   - ack: the record's offset is committed (synchronously, one commit per
//     message, as the other brokers ack each one) before the next record is
//     handed out. A commit is the group's position: a member that dies
//     after the effects and before the commit has its record read again by
//     the partition's next owner, and the guards answer already_applied.
//   - nack: the subscriber seeks back: every partition of the poll is set
//     (SetOffsets) to its first record not yet acked, and polled again
//     after kafkaNackResendSleep. The nacked record comes again, first in
//     its partition; nothing after it is skipped.
//   - Close (or ctx ending) with a message in hand: it is not committed; the
//     member leaves the group and the partition's next owner reads it again.
//     A process killed leaves nothing: its partitions stay its own until
//     the group gives up on it, kafkaSessionTimeout after its last heartbeat.
//
// A member has one message out at a time across all the partitions it
// owns, as a RabbitMQ member with prefetch 1: more members (up to the
// partitions of the topic) is what reads in parallel.
//
// Rebalances (a member joins or leaves): the client holds a rebalance while
// the records of a poll are in hand (BlockRebalanceOnPoll), so no commit
// ever lands for a partition this member no longer owns. When a rebalance
// is waiting, the subscriber seeks back the records it has not handed out
// yet and lets it run after the current message is settled.
type kafkaSubscriber struct {
	brokers []string
	group   string
	topics  *kafkaTopics
	logger  watermill.LoggerAdapter
	faults  *fault.Set

	closing   chan struct{}
	closeOnce sync.Once
	members   sync.WaitGroup
}

func newKafkaSubscriber(brokers []string, group string, topics *kafkaTopics, logger watermill.LoggerAdapter, faults *fault.Set) *kafkaSubscriber {
	return &kafkaSubscriber{brokers: brokers, group: group, topics: topics, logger: logger, faults: faults, closing: make(chan struct{})}
}

// Subscribe creates topic unless it exists and joins its group. The
// channel closes when ctx ends or the subscriber closes.
func (s *kafkaSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	select {
	case <-s.closing:
		return nil, errors.New("subscriber closed")
	default:
	}
	if err := s.topics.ensure(topic); err != nil {
		return nil, err
	}
	m := &kafkaMember{
		group:  KafkaGroup(topic, s.group),
		admin:  s.topics.admin,
		faults: s.faults,
		logger: s.logger.With(watermill.LogFields{"topic": topic, "consumer_group": KafkaGroup(topic, s.group)}),
	}
	m.newClient = func() (*kgo.Client, error) { return kafkaGroupClient(s.brokers, topic, m.group, &m.rebalanceWaits) }
	cl, err := m.newClient()
	if err != nil {
		return nil, err
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan *message.Message)
	s.members.Add(2)
	go func() {
		defer s.members.Done()
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() {
		defer s.members.Done()
		defer close(out)
		defer func() { // its partitions move at once
			if m.cl != nil { // nil: rejoin made no new client
				leaveAndClose(m.cl)
			}
		}()
		defer cancel()
		m.run(ctx, out)
	}()
	return out, nil
}

// Close ends every subscription: a message in hand is left uncommitted,
// acks already given are committed first.
func (s *kafkaSubscriber) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	s.members.Wait()
	return nil
}

// kafkaMember is one Subscribe's member of its group.
type kafkaMember struct {
	cl *kgo.Client
	// newClient makes the member's client: at Subscribe, and again when
	// its joins keep failing (rejoin).
	newClient func() (*kgo.Client, error)
	admin     *kadm.Client
	group     string
	logger    watermill.LoggerAdapter
	faults    *fault.Set
	// rebalanceWaits is set when a rebalance waits for this member to let
	// go of the records it holds (kgo.OnPartitionsCallbackBlocked).
	rebalanceWaits atomic.Bool
}

// run polls and hands out until ctx ends. After a failed group session
// it starts over with a new client (rejoin).
func (m *kafkaMember) run(ctx context.Context, out chan<- *message.Message) {
	for ctx.Err() == nil {
		fetches := m.cl.PollRecords(ctx, kafkaPollRecords)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			m.cl.AllowRebalance()
			return
		}
		var sessionFailed bool
		fetches.EachError(func(topic string, partition int32, err error) {
			var session *kgo.ErrGroupSession
			sessionFailed = sessionFailed || errors.As(err, &session)
			m.logger.Error("Kafka fetch failed; the client retries", err, watermill.LogFields{"partition": partition})
		})
		nacked := m.handOut(ctx, fetches.Records(), out)
		m.cl.AllowRebalance()
		if sessionFailed {
			if err := m.rejoin(ctx); err != nil {
				m.logger.Error("Kafka consumer stopped: no new client", err, nil)
				return
			}
			continue
		}
		if nacked {
			select {
			case <-ctx.Done():
			case <-time.After(kafkaNackResendSleep):
			}
		}
	}
}

// rejoin gives up the member's client after its group session failed: it
// leaves the group, waits out of it until the rebalance it was stuck in is
// over (awaitRebalanceEnd), and joins again with a new client, a new
// member id (see kafkarejoin.go).
func (m *kafkaMember) rejoin(ctx context.Context) error {
	m.logger.Error("Kafka group session failed: leaving the group, joining again with a new client once its rebalance is over", nil, nil)
	leaveAndClose(m.cl)
	awaitRebalanceEnd(ctx, m.admin, m.group, kafkaRejoinWait)
	m.rebalanceWaits.Store(false)
	cl, err := m.newClient()
	if err != nil {
		m.cl = nil
		return err
	}
	m.cl = cl
	return nil
}

// handOut hands records out one at a time and commits each one acked. It
// returns whether one was nacked.
func (m *kafkaMember) handOut(ctx context.Context, records []*kgo.Record, out chan<- *message.Message) (nacked bool) {
	for i, r := range records {
		msg := kafkaMessage(r)
		msgCtx, cancel := context.WithCancel(ctx)
		msg.SetContext(msgCtx)
		acked, stopped := deliver(ctx, msg, out)
		cancel()
		switch {
		case stopped:
			return false // uncommitted: the partition's next owner reads it again
		case !acked:
			rewind(m.cl, records[i:])
			return true
		}
		// The ack is given: commit it even if the subscriber is closing now.
		err := m.faults.Hit(FaultBeforeOffsetCommit)
		if err == nil {
			commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kafkaTimeout)
			err = m.cl.CommitRecords(commitCtx, r)
			cancel()
		}
		if err != nil {
			// Read again later by this group, which the guards absorb.
			m.logger.Error("Kafka offset commit failed: the message will be delivered again", err,
				watermill.LogFields{"partition": r.Partition, "offset": r.Offset, "message_uuid": msg.UUID})
		}
		if m.rebalanceWaits.Swap(false) && i+1 < len(records) {
			rewind(m.cl, records[i+1:]) // let the rebalance run now
			return false
		}
	}
	return false
}

// deliver hands msg to out and waits for its ack or nack. stopped: ctx
// ended first (an ack given by then still counts).
func deliver(ctx context.Context, msg *message.Message, out chan<- *message.Message) (acked, stopped bool) {
	select {
	case out <- msg:
	case <-ctx.Done():
		return false, true
	}
	select {
	case <-msg.Acked():
		return true, false
	case <-msg.Nacked():
		return false, false
	case <-ctx.Done():
		select {
		case <-msg.Acked():
			return true, false
		default:
			return false, true
		}
	}
}

// rewind sets each partition of records back to its first record there,
// so that the next poll reads them again, in order. records are a poll's
// tail: within a partition, in offset order. SetOffsets drops what the
// client had fetched beyond them; it fetches it again.
func rewind(cl *kgo.Client, records []*kgo.Record) {
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range records {
		if offsets[r.Topic] == nil {
			offsets[r.Topic] = map[int32]kgo.EpochOffset{}
		}
		if _, seen := offsets[r.Topic][r.Partition]; !seen {
			offsets[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: r.Offset} // -1: no epoch check
		}
	}
	cl.SetOffsets(offsets)
}

// leaveAndClose leaves the group, waiting at most kafkaTimeout for the
// coordinator's answer (a cluster down at shutdown must not hold it up:
// the group then gives up on the member after kafkaSessionTimeout), and
// closes the client. Nothing it holds is committed.
func leaveAndClose(cl *kgo.Client) {
	cl.AllowRebalance() // what it held is given up, not committed
	ctx, cancel := context.WithTimeout(context.Background(), kafkaTimeout)
	defer cancel()
	_ = cl.LeaveGroupContext(ctx)
	cl.Close()
}

// kafkaGroupClient is a client that joins group as a consumer of topic:
// offsets committed by the caller only (DisableAutoCommit), a new group
// starting at the first record kept (AtStart), a rebalance held while
// polled records are in hand (BlockRebalanceOnPoll: the caller calls
// AllowRebalance when they are settled). rebalanceWaits, if not nil, is set
// when a rebalance is held; extra options follow the defaults.
func kafkaGroupClient(brokers []string, topic, group string, rebalanceWaits *atomic.Bool, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("orderpaid"),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(kafkaSessionTimeout),
		kgo.HeartbeatInterval(kafkaHeartbeat),
		kgo.RebalanceTimeout(kafkaRebalanceTimeout),
		// A fetch waits this long for records before the broker answers
		// empty; a partition assigned meanwhile (a rebalance) waits for that
		// answer before it is fetched. franz-go's default is 5s, the Java
		// client's 500ms: 5s was seen delaying a new member's first records.
		kgo.FetchMaxWait(kafkaFetchMaxWait),
		// A JoinGroup waits the rebalance timeout and this; see
		// kafkaJoinOverhead.
		kgo.RequestTimeoutOverhead(kafkaJoinOverhead),
	}
	opts = append(opts, extra...)
	if rebalanceWaits != nil {
		opts = append(opts, kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) { rebalanceWaits.Store(true) }))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("create Kafka consumer of %s in group %s: %w", topic, group, err)
	}
	return cl, nil
}
