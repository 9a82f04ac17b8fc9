package broker

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaPositionsApply runs records, polled by cl, as one batch of group
// with the position kept with the effects (kafkaPositions.apply, steps 1
// to 4), for tests that play a member at a chosen moment.
func KafkaPositionsApply(ctx context.Context, pool *pgxpool.Pool, group, topic string, cl *kgo.Client, records []*kgo.Record, handle func(msgs []*message.Message) (done int)) (done int, err error) {
	return (&kafkaPositions{pool: pool}).apply(ctx, group, topic, cl, records, handle)
}

// NewPostgresSubscriberRowLocked is a postgres subscriber that takes its
// group's turn as watermill does, with the position's row locked FOR
// UPDATE: what pgturn.go replaces, for the test that shows the difference.
func NewPostgresSubscriberRowLocked(pool *pgxpool.Pool, group string) (message.Subscriber, error) {
	return wsql.NewSubscriber(wsql.BeginnerFromPgx(pool), wsql.SubscriberConfig{
		ConsumerGroup: group, SchemaAdapter: PostgresSchema{BatchSize: 10}, OffsetsAdapter: wsql.DefaultPostgreSQLOffsetsAdapter{},
		PollInterval: 20 * time.Millisecond, ResendInterval: 20 * time.Millisecond,
	}, watermill.NopLogger{})
}
