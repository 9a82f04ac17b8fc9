package broker

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
)

// newPostgres uses PostgreSQL itself as the broker: one watermill_<topic>
// table per topic and one offsets table per topic, keyed by consumer group.
// Members of one group take turns (an advisory lock, pgturn.go), so with
// this broker more replicas add availability, not throughput (lanes.go says
// why the consumers read in one lane).
func newPostgres(pool *pgxpool.Pool, logger watermill.LoggerAdapter) (*Broker, error) {
	pub, err := wsql.NewPublisher(wsql.BeginnerFromPgx(pool), wsql.PublisherConfig{
		SchemaAdapter:        wsql.DefaultPostgreSQLSchema{},
		AutoInitializeSchema: true,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("create postgres publisher: %w", err)
	}
	return &Broker{
		Name:           "postgres",
		Publisher:      pub,
		BatchPublisher: pub, // it inserts a whole call in one statement already
		pool:           pool,
		newSubscriber: func(group string) (message.Subscriber, error) {
			return NewPostgresSubscriber(pool, PostgresSubscriberConfig{ConsumerGroup: group}, logger)
		},
		batchSource: func(topic, group string, size int) (BatchSource, error) {
			return NewBatchReader(pool, topic, group, size), nil
		},
		ping: func(ctx context.Context) error { return pool.Ping(ctx) },
	}, nil
}
