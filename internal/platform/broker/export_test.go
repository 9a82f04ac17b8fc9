package broker

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Lanes returns the per-lane subscribers of a subscriber read in lanes, for
// tests that break one lane.
func Lanes(s message.Subscriber) []message.Subscriber { return s.(*lanedSubscriber).lanes }

// KafkaPositionsApply runs records, polled by cl, as one batch of group
// with the position kept with the effects (kafkaPositions.apply, steps 1
// to 4), for tests that play a member at a chosen moment.
func KafkaPositionsApply(ctx context.Context, pool *pgxpool.Pool, group, topic string, cl *kgo.Client, records []*kgo.Record, handle func(msgs []*message.Message) (done int)) (done int, err error) {
	return (&kafkaPositions{pool: pool}).apply(ctx, group, topic, cl, records, handle)
}
