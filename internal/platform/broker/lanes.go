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

// Lanes
//
// watermill-sql hands a consumer group its messages one at a time: it locks
// the group's offset row, reads the next rows, and waits for each message's
// ack before it hands out the next one. A group is a single line, however
// many workers run, and each message's round trips to PostgreSQL (a commit
// each, waiting for the disk) add up.
//
// Lanes split the line by order, as Kafka splits a topic into partitions: a
// group reads its table through several sub-groups, "<group>.lane<k>of<n>",
// each with its own offset row, and lane k takes only the rows whose order id
// hashes to k (see LaneOf). Lanes run in parallel; inside a lane, and so for
// any one order, messages are still handed out one at a time and in order.
// Members of one lane take turns (pgturn.go), so two workers never hand out
// the same message in the normal case, and a worker skips a lane another one
// holds (PostgresSchema.SelectQuery): with several workers, each holds some
// of the lanes.
//
// The number of lanes is part of where the group stands, and of its name:
// another number starts new sub-groups at offset 0, which re-delivers the
// whole table. The outbox relay reads in outbox.RelayLanes lanes. The postgres
// broker's consumers read in one: their handlers' failure behaviour (what a
// killed worker repeats) is what the scenarios teach, and with lanes it would
// depend on which lanes the orders hashed to; see docs/performance.md.

// Lane keys: the SQL expression, over a row of a watermill-sql messages
// table, that a message's lane is computed from. Both are the order id every
// event carries in its metadata (messages.MetadataOrderID), else the row's id,
// so a message without one still has exactly one lane.
const (
	// LaneKeyMessage is the key of a broker topic's row: the message itself.
	LaneKeyMessage = `coalesce(metadata ->> 'order_id', uuid)`
	// LaneKeyEnvelope is the key of an outbox row, whose payload is the
	// forwarder's envelope around the message (its metadata inside).
	LaneKeyEnvelope = `coalesce(payload -> 'metadata' ->> 'order_id', uuid)`
)

// LaneOf returns the SQL expression of the lane (0 to lanes-1) of a row,
// given its lane key. hashtext is PostgreSQL's own string hash: stable for a
// given server version, cheap, and computed by the server that filters, so
// every subscriber agrees.
func LaneOf(key string, lanes int) string {
	return fmt.Sprintf(`abs(hashtext(%s)::bigint) %% %d`, key, lanes)
}

// LaneGroup is the consumer group lane k of lanes reads group's messages as.
// The number of lanes is in the name: with another number, a lane holds
// other messages, and a position kept for the old lane would skip some.
func LaneGroup(group string, lane, lanes int) string {
	return fmt.Sprintf("%s.lane%dof%d", group, lane, lanes)
}

// PostgresSubscriberConfig configures NewPostgresSubscriber.
type PostgresSubscriberConfig struct {
	// ConsumerGroup is the group; with lanes, lane k reads as
	// LaneGroup(ConsumerGroup, k, Lanes).
	ConsumerGroup string
	// Lanes is how many lanes; 0 or 1 is one line, read as ConsumerGroup.
	Lanes int
	// LaneKey is LaneKeyMessage or LaneKeyEnvelope (with lanes only).
	LaneKey string
	// BatchSize is how many rows one poll reads (default 10).
	BatchSize int
	// PollInterval is the wait after an empty poll (default 100ms).
	PollInterval time.Duration
	// ResendInterval is the wait before a nacked message is handed out again
	// (default 200ms).
	ResendInterval time.Duration
}

// NewPostgresSubscriber reads watermill-sql tables through pool with
// PostgresSchema's poll, in lanes if cfg.Lanes > 1: the postgres broker's
// consumers and the outbox relay both use it.
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

// lanedSubscriber reads one topic through several watermill-sql subscribers,
// one per lane, and hands their messages out on one channel. The router
// handles each message it receives in a goroutine of its own, so the lanes'
// messages are handled in parallel.
type lanedSubscriber struct {
	lanes []message.Subscriber

	closeOnce sync.Once
	closing   chan struct{}
	closeErr  error
}

func newLanedSubscriber(lanes []message.Subscriber) *lanedSubscriber {
	return &lanedSubscriber{lanes: lanes, closing: make(chan struct{})}
}

// Subscribe subscribes every lane to topic and merges them. A message
// received after Close began is nacked, not handed out: its lane's
// subscriber is closing too and delivers it again later.
func (l *lanedSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	// One context for the lanes of this subscription: if a lane cannot
	// subscribe, the lanes subscribed before it are stopped too, instead of
	// reading on for a subscription the caller never got.
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

// Close closes every lane; their channels, and then the merged one, close
// once their subscriptions have ended.
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
