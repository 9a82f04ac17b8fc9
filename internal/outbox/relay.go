package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/telemetry"
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
	// TracerProvider traces each relayed message as a span "relay <topic>"
	// (default: none).
	TracerProvider trace.TracerProvider
	// System is the messaging.system of the broker out publishes to, for the
	// spans (telemetry.MessagingSystem of the broker's name).
	System string
	// Metrics receives the relay lag (default: not recorded).
	Metrics *telemetry.Metrics
}

// Relay copies committed outbox rows to the broker, at least once.
type Relay struct {
	lanes []*forwarder.Forwarder // one forwarder a lane
}

// The relay reads the outbox as consumer group RelayGroup, in RelayLanes
// lanes by order id ("outbox_relay.lane0of2", "outbox_relay.lane1of2"; see
// broker/lanes.go), a forwarder each: the rows of different orders are
// relayed in parallel, those of one order in the order they were written.
// One lane was the slowest stage of the pipeline: the relay publishes twice
// per order, each a commit. The OutboxBacklog query repeats the number.
const (
	RelayGroup = "outbox_relay"
	RelayLanes = 2
)

// NewRelay builds a relay reading the outbox through pool and publishing to out.
// Several relays may run at once: they share one consumer group, and take
// turns on each lane (broker/pgturn.go) instead of publishing the same rows
// twice in the normal case.
func NewRelay(pool *pgxpool.Pool, out message.Publisher, logger watermill.LoggerAdapter, cfg RelayConfig) (*Relay, error) {
	traced := newTracedPublisher(out, cfg)
	closeTimeout := cmp.Or(cfg.CloseTimeout, 10*time.Second)
	r := &Relay{}
	for lane := range RelayLanes {
		sub, err := broker.NewPostgresSubscriber(pool, broker.PostgresSubscriberConfig{
			ConsumerGroup: RelayGroup,
			Lane:          lane,
			Lanes:         RelayLanes,
			LaneKey:       broker.LaneKeyEnvelope,
			BatchSize:     cmp.Or(cfg.BatchSize, 100),
			PollInterval:  cmp.Or(cfg.PollInterval, 100*time.Millisecond),
		}, logger)
		if err != nil {
			return nil, fmt.Errorf("create outbox subscriber: %w", err)
		}
		// At shutdown the publish in hand finishes and the acks of the batch
		// so far are committed, so a deploy re-relays nothing. The drain gets
		// most of the close timeout; the rest is for closing the subscription.
		fwd, err := forwarder.NewForwarder(broker.NewDraining(sub, closeTimeout*3/4), traced, logger, forwarder.Config{
			ForwarderTopic: Topic,
			CloseTimeout:   closeTimeout,
		})
		if err != nil {
			return nil, fmt.Errorf("create outbox forwarder: %w", err)
		}
		r.lanes = append(r.lanes, fwd)
	}
	return r, nil
}

// Run relays until ctx is done, then closes the lanes' forwarders and
// returns. A lane that fails stops the others.
func (r *Relay) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(r.lanes))
	var wg sync.WaitGroup
	for i, fwd := range r.lanes {
		wg.Go(func() {
			if errs[i] = runLane(ctx, fwd); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runLane runs one lane's forwarder until ctx is done, then closes it.
func runLane(ctx context.Context, fwd *forwarder.Forwarder) error {
	errc := make(chan error, 1)
	go func() { errc <- fwd.Run(ctx) }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("run outbox relay: %w", err)
		}
		return nil
	case <-ctx.Done():
		// Close only a forwarder that has started. watermill's Router.Close
		// holds the router's handler lock while it waits for the handlers, so
		// a Close that comes first (a SIGTERM right after the worker started)
		// keeps the handler from ever starting, waits for it all of
		// CloseTimeout and fails: the worker would exit 1 on a plain SIGTERM.
		select {
		case <-fwd.Running():
		case <-errc:
			// It ended while starting (the stop cut its start short): the
			// stop asked for is done.
			return nil
		}
		if err := fwd.Close(); err != nil {
			return fmt.Errorf("close outbox relay: %w", err)
		}
		<-errc
		return nil
	}
}
