package outbox

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
)

// Topic is the forwarder topic: the outbox table is watermill_outbox.
const Topic = "outbox"

// Publish writes msgs, addressed to topic, into the outbox inside tx. They
// become visible to the relay only when tx commits, and vanish with it when it
// rolls back.
func Publish(ctx context.Context, tx pgx.Tx, topic string, msgs ...*message.Message) error {
	pub, err := wsql.NewPublisher(wsql.TxFromPgx(tx), wsql.PublisherConfig{
		SchemaAdapter: wsql.DefaultPostgreSQLSchema{},
	}, watermill.NopLogger{})
	if err != nil {
		return fmt.Errorf("create outbox publisher: %w", err)
	}
	for _, m := range msgs {
		m.SetContext(ctx)
	}
	fwd := forwarder.NewPublisher(pub, forwarder.PublisherConfig{ForwarderTopic: Topic})
	if err := fwd.Publish(topic, msgs...); err != nil {
		return fmt.Errorf("write %d message(s) for %s to the outbox: %w", len(msgs), topic, err)
	}
	return nil
}
