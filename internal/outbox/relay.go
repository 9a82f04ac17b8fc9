package outbox

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RelayConfig tunes the relay. Zero values take the documented defaults.
type RelayConfig struct {
	// BatchSize is how many outbox rows one poll reads (default 100). A larger
	// batch is faster and re-publishes more after a crash.
	BatchSize int
	// PollInterval is the wait after an empty poll (default 100ms).
	PollInterval time.Duration
	// CloseTimeout bounds the wait for in-flight publishes at shutdown (default 10s).
	CloseTimeout time.Duration
}

// Relay copies committed outbox rows to the broker, at least once.
type Relay struct {
	fwd *forwarder.Forwarder
}

// NewRelay builds a relay reading the outbox through pool and publishing to out.
// Several relays may run at once: they share one consumer group, whose offset
// row watermill locks FOR UPDATE, so they take turns instead of publishing the
// same rows twice in the normal case.
func NewRelay(pool *pgxpool.Pool, out message.Publisher, logger watermill.LoggerAdapter, cfg RelayConfig) (*Relay, error) {
	sub, err := wsql.NewSubscriber(wsql.BeginnerFromPgx(pool), wsql.SubscriberConfig{
		ConsumerGroup:    "outbox_relay",
		SchemaAdapter:    wsql.DefaultPostgreSQLSchema{SubscribeBatchSize: cmp.Or(cfg.BatchSize, 100)},
		OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
		PollInterval:     cmp.Or(cfg.PollInterval, 100*time.Millisecond),
		InitializeSchema: true,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("create outbox subscriber: %w", err)
	}
	fwd, err := forwarder.NewForwarder(sub, out, logger, forwarder.Config{
		ForwarderTopic: Topic,
		CloseTimeout:   cmp.Or(cfg.CloseTimeout, 10*time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("create outbox forwarder: %w", err)
	}
	return &Relay{fwd: fwd}, nil
}

// Run relays until ctx is done, then closes the forwarder and returns.
func (r *Relay) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- r.fwd.Run(ctx) }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("run outbox relay: %w", err)
		}
		return nil
	case <-ctx.Done():
		if err := r.fwd.Close(); err != nil {
			return fmt.Errorf("close outbox relay: %w", err)
		}
		<-errc
		return nil
	}
}

// Running is closed once the relay is subscribed and relaying.
func (r *Relay) Running() chan struct{} { return r.fwd.Running() }
