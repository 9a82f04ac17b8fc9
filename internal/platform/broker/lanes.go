package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Lanes. watermill-sql hands a group its messages one at a time, each
// waiting for the previous ack: a group is one line however many workers run.
// Lanes split the line by order, as Kafka's partitions do: lane k of n is a
// sub-group, "<group>.lane<k>of<n>", with its own offset row, reading only the
// rows whose order id hashes to k. Lanes run in parallel; within a lane, and so
// for any one order, messages still go one at a time and in order. Members of
// a lane take turns (pgturn.go), and a worker skips a lane another holds.
//
// The number of lanes is part of the group's name: another number starts at
// offset 0 and re-delivers the whole table. The outbox relay reads in
// outbox.RelayLanes lanes; the consumers in one, so what a killed worker
// repeats does not depend on how orders hashed (docs/performance.md).

// Lane keys: the SQL over a messages row that its lane is computed from, the
// order id in its metadata (messages.MetadataOrderID), else the row's id.
const (
	// LaneKeyMessage is the key of a broker topic's row.
	LaneKeyMessage = `coalesce(metadata ->> 'order_id', uuid)`
	// LaneKeyEnvelope is the key of an outbox row, the forwarder's envelope.
	LaneKeyEnvelope = `coalesce(payload -> 'metadata' ->> 'order_id', uuid)`
)

// LaneOf returns the SQL of a row's lane (0 to lanes-1) from its lane key;
// hashtext is computed by the server that filters, so every subscriber agrees.
func LaneOf(key string, lanes int) string {
	return fmt.Sprintf(`abs(hashtext(%s)::bigint) %% %d`, key, lanes)
}

// LaneGroup is the consumer group lane k of lanes reads group's messages as.
func LaneGroup(group string, lane, lanes int) string {
	return fmt.Sprintf("%s.lane%dof%d", group, lane, lanes)
}

// PostgresSubscriberConfig configures NewPostgresSubscriber.
type PostgresSubscriberConfig struct {
	ConsumerGroup string // with lanes, lane k reads as LaneGroup(ConsumerGroup, k, Lanes)
	Lanes         int    // 0 or 1: one line, read as ConsumerGroup
	LaneKey       string // LaneKeyMessage or LaneKeyEnvelope (with lanes only)
	BatchSize     int    // rows one poll reads (default 10)
	// PollInterval is the wait after an empty poll (default 100ms);
	// ResendInterval before a nacked message is handed out again (200ms).
	PollInterval, ResendInterval time.Duration
}

// NewPostgresSubscriber reads watermill-sql tables through pool with
// PostgresSchema's poll, in lanes if cfg.Lanes > 1.
func NewPostgresSubscriber(pool *pgxpool.Pool, cfg PostgresSubscriberConfig, logger watermill.LoggerAdapter) (message.Subscriber, error) {
	n := max(cfg.Lanes, 1)
	lanes := make([]message.Subscriber, n)
	for k := range lanes {
		group, schema := cfg.ConsumerGroup, PostgresSchema{BatchSize: cmp.Or(cfg.BatchSize, 10), Turn: true}
		if n > 1 {
			group = LaneGroup(cfg.ConsumerGroup, k, n)
			schema.LaneKey, schema.Lanes, schema.Lane = cfg.LaneKey, n, k
		}
		sub, err := wsql.NewSubscriber(newTurnBeginner(pool, group), wsql.SubscriberConfig{
			ConsumerGroup:    group,
			SchemaAdapter:    schema,
			OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
			PollInterval:     cmp.Or(cfg.PollInterval, 100*time.Millisecond),
			ResendInterval:   cmp.Or(cfg.ResendInterval, 200*time.Millisecond),
			InitializeSchema: true,
		}, logger)
		if err != nil {
			return nil, fmt.Errorf("create subscriber for %s: %w", group, err)
		}
		lanes[k] = sub
	}
	if n == 1 {
		return lanes[0], nil
	}
	return newLanedSubscriber(lanes), nil
}

// lanedSubscriber merges its lanes' subscribers into one channel; the router
// handles each message in a goroutine of its own, so lanes run in parallel.
type lanedSubscriber struct {
	lanes     []message.Subscriber
	closeOnce sync.Once
	closing   chan struct{}
	closeErr  error
}

func newLanedSubscriber(lanes []message.Subscriber) *lanedSubscriber {
	return &lanedSubscriber{lanes: lanes, closing: make(chan struct{})}
}

// Subscribe subscribes every lane to topic and merges them; a message
// received after Close began is nacked, for its lane to deliver again.
func (l *lanedSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	// One context for the lanes: if one cannot subscribe, the others stop.
	ctx, cancel := context.WithCancel(ctx)
	ins := make([]<-chan *message.Message, 0, len(l.lanes))
	for k, lane := range l.lanes {
		in, err := lane.Subscribe(ctx, topic)
		if err != nil {
			cancel()
			for _, in := range ins {
				for msg := range in { // closed once the lane has stopped
					msg.Nack()
				}
			}
			return nil, fmt.Errorf("subscribe lane %d: %w", k, err)
		}
		ins = append(ins, in)
	}
	out := make(chan *message.Message)
	var wg sync.WaitGroup
	for _, in := range ins {
		wg.Go(func() {
			for msg := range in {
				select {
				case out <- msg:
				case <-l.closing:
					msg.Nack()
				}
			}
		})
	}
	go func() {
		wg.Wait()
		cancel()
		close(out)
	}()
	return out, nil
}

// SubscribeInitialize creates the topic's tables and every lane's offset row.
func (l *lanedSubscriber) SubscribeInitialize(topic string) error {
	for k, lane := range l.lanes {
		init, ok := lane.(message.SubscribeInitializer)
		if !ok {
			continue
		}
		if err := init.SubscribeInitialize(topic); err != nil {
			return fmt.Errorf("initialise lane %d: %w", k, err)
		}
	}
	return nil
}

// Close closes every lane; their channels, then the merged one, close after.
func (l *lanedSubscriber) Close() error {
	l.closeOnce.Do(func() {
		close(l.closing)
		errs := make([]error, 0, len(l.lanes))
		for _, lane := range l.lanes {
			errs = append(errs, lane.Close())
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}
