package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

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
	envelopes
	readers []*broker.BatchReader
	poll    time.Duration
}

// NewBatchRelay builds a batch relay of size rows a read, reading through
// pool and publishing to out, traced and measured as cfg says.
func NewBatchRelay(pool *pgxpool.Pool, out message.Publisher, logger *slog.Logger, size int, cfg RelayConfig) *BatchRelay {
	r := &BatchRelay{
		envelopes: envelopes{out: newTracedPublisher(out, cfg), logger: logger},
		poll:      cmp.Or(cfg.PollInterval, 100*time.Millisecond),
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

// envelopes publishes outbox rows, the envelopes Publish wrote, to their
// destination topics: the batch relay's and the logical relay's output.
type envelopes struct {
	out    tracedPublisher
	logger *slog.Logger
}

// relay publishes the rows of one batch, one call per topic, and returns
// how many rows, from the first, were published.
//
// Grouping by topic keeps each topic's rows in their outbox order, which is
// the only order a consumer sees: each topic has its own consumers, which
// never saw one topic's messages in step with another's. It turns a batch
// whose topics alternate (order_paid from the api, order_confirmed from the
// worker) into a call per topic instead of one per row, and a call is what
// costs most on RabbitMQ (a channel and its confirms). When a call fails,
// the rows up to the first row of that topic count as published; rows of
// other topics after it that went out will go out again with the next
// read: the relay is at least once, and the consumers' guards absorb it.
func (r envelopes) relay(rows []*message.Message) int {
	var topics []string // in order of first appearance
	byTopic := map[string][]*message.Message{}
	topicOf := make([]string, 0, len(rows))
	for _, row := range rows {
		var e envelope
		if err := json.Unmarshal(row.Payload, &e); err != nil || e.DestinationTopic == "" {
			if len(topicOf) == 0 {
				r.logger.Error("outbox batch relay: a row is not a message envelope; it is retried, and holds its lane",
					"row", row.UUID, "err", fmt.Sprint(err))
			}
			break // the rows before it are relayed; it comes first next time
		}
		m := message.NewMessage(e.UUID, e.Payload)
		m.Metadata = e.Metadata
		if m.Metadata == nil {
			m.Metadata = message.Metadata{}
		}
		if _, seen := byTopic[e.DestinationTopic]; !seen {
			topics = append(topics, e.DestinationTopic)
		}
		byTopic[e.DestinationTopic] = append(byTopic[e.DestinationTopic], m)
		topicOf = append(topicOf, e.DestinationTopic)
	}
	failed := ""
	for _, topic := range topics {
		if err := r.out.publishBatch(topic, byTopic[topic]); err != nil {
			r.logger.Warn("outbox batch relay: publish failed; retrying", "topic", topic, "messages", len(byTopic[topic]), "err", err)
			failed = topic
			break
		}
	}
	// Topics go out in the order of their first row, so every row before
	// the failed topic's first row belongs to a topic that went out.
	if i := slices.Index(topicOf, failed); failed != "" {
		return i
	}
	return len(topicOf)
}
