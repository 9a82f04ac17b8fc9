package broker

import (
	"cmp"
	"fmt"
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
	ConsumerGroup string // with lanes, the subscriber reads as LaneGroup(ConsumerGroup, Lane, Lanes)
	Lane, Lanes   int    // lane Lane of Lanes; Lanes 0 or 1: one line, read as ConsumerGroup
	LaneKey       string // LaneKeyMessage or LaneKeyEnvelope (with lanes only)
	BatchSize     int    // rows one poll reads (default 10)
	// PollInterval is the wait after an empty poll (default 100ms);
	// ResendInterval before a nacked message is handed out again (200ms).
	PollInterval, ResendInterval time.Duration
}

// NewPostgresSubscriber reads watermill-sql tables through pool with
// PostgresSchema's poll, one lane of them if cfg.Lanes > 1: a reader of
// lanes runs a subscriber per lane (outbox.NewRelay, a forwarder each).
func NewPostgresSubscriber(pool *pgxpool.Pool, cfg PostgresSubscriberConfig, logger watermill.LoggerAdapter) (message.Subscriber, error) {
	group, schema := cfg.ConsumerGroup, PostgresSchema{BatchSize: cmp.Or(cfg.BatchSize, 10), Turn: true}
	if cfg.Lanes > 1 {
		group = LaneGroup(cfg.ConsumerGroup, cfg.Lane, cfg.Lanes)
		schema.LaneKey, schema.Lanes, schema.Lane = cfg.LaneKey, cfg.Lanes, cfg.Lane
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
	return sub, nil
}
