package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
)

// BatchRelay is the relay of batch mode (CONSUMER_BATCH_SIZE > 1): it reads
// each lane of the outbox up to Size rows at a time (broker.BatchReader, the
// same lanes and positions as Relay's) and publishes them in one call per
// run of rows bound for the same topic, which the postgres broker writes as
// one multi-row INSERT, one commit, instead of one per message. The
// guarantee is Relay's: at least once. A lane's position moves past the rows
// published; a failed publish stops the lane at that row, and the rows
// after it in its batch come again with it (a repeat the consumers' guards
// absorb). Within a lane, rows are published in the order they were
// written, so one order's messages keep their order.
type BatchRelay struct {
	readers []*broker.BatchReader
	out     tracedPublisher
	logger  *slog.Logger
	poll    time.Duration
}

// NewBatchRelay builds a batch relay of size rows a read, reading through
// pool and publishing to out, traced and measured as cfg says.
func NewBatchRelay(pool *pgxpool.Pool, out message.Publisher, logger *slog.Logger, size int, cfg RelayConfig) *BatchRelay {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	r := &BatchRelay{
		out:    tracedPublisher{next: out, tracer: tp.Tracer("github.com/orderpaid/orderpaid/internal/outbox"), system: cfg.System, metrics: cfg.Metrics},
		logger: logger,
		poll:   cmp.Or(cfg.PollInterval, 100*time.Millisecond),
	}
	for lane := range RelayLanes {
		r.readers = append(r.readers, broker.NewLaneBatchReader(pool, Topic, RelayGroup, size, RelayLanes, lane, broker.LaneKeyEnvelope))
	}
	return r
}

// Run relays every lane until ctx ends; a batch in flight is finished.
func (r *BatchRelay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, reader := range r.readers {
		wg.Go(func() { r.runLane(ctx, reader) })
	}
	wg.Wait()
	return nil
}

func (r *BatchRelay) runLane(ctx context.Context, reader *broker.BatchReader) {
	reader.Loop(ctx, r.poll, 0, r.relay, func(err error) {
		r.logger.WarnContext(ctx, "outbox batch relay: read failed; retrying", "err", err)
	})
}

// envelope is an outbox row's payload: the message and its destination, as
// Publish (watermill's forwarder publisher) wrote it.
type envelope struct {
	DestinationTopic string            `json:"destination_topic"`
	UUID             string            `json:"uuid"`
	Payload          []byte            `json:"payload"`
	Metadata         map[string]string `json:"metadata"`
}

// relay publishes the rows of one batch, a call per run of one topic, and
// returns how many rows, from the first, were published.
func (r *BatchRelay) relay(rows []*message.Message) int {
	done := 0
	for done < len(rows) {
		topic := ""
		var run []*message.Message
		for _, row := range rows[done:] {
			var e envelope
			if err := json.Unmarshal(row.Payload, &e); err != nil || e.DestinationTopic == "" {
				if len(run) == 0 {
					r.logger.Error("outbox batch relay: a row is not a message envelope; it is retried, and holds its lane",
						"row", row.UUID, "err", fmt.Sprint(err))
					return done
				}
				break
			}
			if topic != "" && e.DestinationTopic != topic {
				break
			}
			topic = e.DestinationTopic
			m := message.NewMessage(e.UUID, e.Payload)
			m.Metadata = e.Metadata
			if m.Metadata == nil {
				m.Metadata = message.Metadata{}
			}
			run = append(run, m)
		}
		if err := r.out.publishBatch(topic, run); err != nil {
			r.logger.Warn("outbox batch relay: publish failed; retrying", "topic", topic, "messages", len(run), "err", err)
			return done
		}
		done += len(run)
	}
	return done
}
