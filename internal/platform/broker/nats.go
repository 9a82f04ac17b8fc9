package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Settings of the NATS JetStream broker.
const (
	// natsAckWait is how long the server waits for an ack before it delivers
	// the message again (to any member of the group). A handler slower than
	// this gets its message processed twice: the inbox absorbs that.
	natsAckWait = 30 * time.Second
	// natsMaxAckPending caps the unacknowledged messages of one group. Pushed
	// messages wait in the client while their AckWait clock runs, so keep
	// natsMaxAckPending x handler time well under natsAckWait.
	natsMaxAckPending = 32
	// natsDuplicateWindow is how long the stream remembers Nats-Msg-Id values.
	natsDuplicateWindow = 2 * time.Minute
)

// newNATS connects to NATS JetStream with watermill-nats. For a watermill
// topic such as order_paid and a consumer group such as worker, the server
// holds:
//
//   - stream "order_paid" on subject "order_paid", one per topic, file storage,
//     interest retention: a message is kept until every durable consumer of the
//     stream (every consumer group) has acked it, and not at all if no consumer
//     exists yet. Created by Provision. AutoProvision is a fallback that
//     creates a missing stream with the server's default (limits) retention;
//     it costs a stream lookup on every Publish call (watermill does not cache
//     the answer).
//   - durable push consumer "order_paid_worker" (<topic>_<group>), one per
//     (topic, consumer group), explicit ack, AckWait natsAckWait, deliver group
//     (queue group) of the same name: the members of the group share its
//     messages, each message goes to one of them. Created by Provision, which
//     Subscribe also calls first.
//
// Provision, not the library, must create the consumer: nats.go deletes a
// consumer it created itself as soon as that subscription ends, which would
// throw away the group's position and, with interest retention, its messages.
//
// The publisher sets the Nats-Msg-Id header to the message's outbox write id
// (MetadataOutboxWriteID; the message UUID when there is none); the
// stream drops a second publish of the same id within natsDuplicateWindow.
// That spares work when the relay re-forwards a batch soon after a crash; it
// is an optimisation, not the guarantee: a later re-publish, or a redelivery
// after AckWait, still reaches the consumer, whose guards absorb it. It is
// NOT the message UUID (watermill's TrackMsgId): an operator replaying a
// message with its original id would be silently dropped by the server.
// The UUID travels in the _watermill_message_uuid header, metadata in the
// other headers (case preserved). Acks are synchronous (AckAsync false): the
// server has the ack before the next message is handled. The subscriber's own
// AckWaitTimeout equals natsAckWait: watermill gives up on a handler when the
// server redelivers its message.
//
// In batch mode (CONSUMER_BATCH_SIZE > 1) natsBatchSource reads the same
// durable, and raises its MaxAckPending to the batch size (see natsbatch.go).
//
// Ping reports the publisher connection's status; connections reconnect
// forever (MaxReconnects -1) instead of nats.go's default of 60 attempts.
func newNATS(ctx context.Context, url string, logger watermill.LoggerAdapter) (*Broker, error) {
	nc, err := natsConnect(url)
	if err != nil {
		return nil, err
	}
	js, err := nc.JetStream()
	if err == nil {
		_, err = js.AccountInfo(nats.Context(ctx))
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("use JetStream at %s (is nats-server started with -js?): %w", config.RedactURL(url), err)
	}
	pub, err := wnats.NewPublisherWithNatsConn(nc, wnats.PublisherPublishConfig{
		Marshaler:         &wnats.NATSMarshaler{},
		SubjectCalculator: natsSubjects,
		JetStream:         natsJetStreamConfig(""),
	}, logger)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("create nats publisher: %w", err)
	}
	provision := func(topic, group string) error { return provisionNATS(js, topic, group) }
	return &Broker{
		Name:           "nats",
		Publisher:      natsMsgIDPublisher{pub},
		BatchPublisher: natsMsgIDPublisher{pub}, // the same value: Close closes it once
		newSubscriber: func(group string) (message.Subscriber, error) {
			// Each subscriber owns its connection: Close drains (and closes) it.
			snc, err := natsConnect(url)
			if err != nil {
				return nil, err
			}
			sub, err := wnats.NewSubscriberWithNatsConn(snc, wnats.SubscriberSubscriptionConfig{
				Unmarshaler:       &wnats.NATSMarshaler{},
				AckWaitTimeout:    natsAckWait,
				CloseTimeout:      10 * time.Second,
				SubjectCalculator: natsSubjects,
				QueueGroupPrefix:  group,
				JetStream:         natsJetStreamConfig(group),
			}, logger)
			if err != nil {
				snc.Close()
				return nil, fmt.Errorf("create nats subscriber: %w", err)
			}
			return natsSubscriber{Subscriber: sub, group: group, provision: provision}, nil
		},
		batchSource: func(topic, group string, size int) (BatchSource, error) {
			return newNATSBatchSource(js, url, topic, group, size)
		},
		provision: provision,
		ping: func(context.Context) error {
			if status := nc.Status(); status != nats.CONNECTED {
				return fmt.Errorf("nats connection is %s", status)
			}
			return nil
		},
	}, nil
}

// natsConnect dials NATS and explains what to do when it is not running.
func natsConnect(url string) (*nats.Conn, error) {
	nc, err := nats.Connect(url, nats.Name("orderpaid"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: is nats-server running at %s? start it with: nats-server -js: %w",
			config.RedactURL(url), err)
	}
	return nc, nil
}

// natsJetStreamConfig is the JetStream part of the publisher and subscriber
// configuration. nats.ManualAck is essential: without it nats.go acks every
// message when watermill's callback returns, and watermill returns without
// acking when it shuts down or its own ack timer fires, so the message would
// be acked unprocessed instead of redelivered.
func natsJetStreamConfig(group string) wnats.JetStreamConfig {
	return wnats.JetStreamConfig{
		AutoProvision:     true,
		SubscribeOptions:  []nats.SubOpt{nats.AckExplicit(), nats.ManualAck(), nats.AckWait(natsAckWait)},
		TrackMsgId:        false, // natsMsgIDPublisher sets Nats-Msg-Id itself
		AckAsync:          false,
		DurablePrefix:     group,
		DurableCalculator: natsDurableName,
	}
}

// natsDurableName names the durable consumer (and its deliver group) of one
// consumer group on one topic: <topic>_<group>, like the AMQP queue.
func natsDurableName(group, topic string) string { return topic + "_" + group }

// natsSubjects maps a topic to its subject (the topic itself) and the queue
// group the members of a consumer group join (the durable's name).
func natsSubjects(group, topic string) *wnats.SubjectDetail {
	return &wnats.SubjectDetail{Primary: topic, QueueGroup: natsDurableName(group, topic)}
}

// provisionNATS creates the stream of topic and the durable consumer of group
// on it, unless they exist. An existing stream or consumer is left as it is
// (to change one, delete it or edit it with the nats CLI).
func provisionNATS(js nats.JetStreamManager, topic, group string) error {
	_, err := js.StreamInfo(topic)
	if errors.Is(err, nats.ErrStreamNotFound) {
		_, err = js.AddStream(&nats.StreamConfig{
			Name:        topic,
			Description: "orderpaid topic " + topic,
			Subjects:    []string{topic},
			Retention:   nats.InterestPolicy,
			Storage:     nats.FileStorage,
			Duplicates:  natsDuplicateWindow,
		})
		if errors.Is(err, nats.ErrStreamNameAlreadyInUse) {
			err = nil // another replica created it first
		}
	}
	if err != nil {
		return fmt.Errorf("create stream %s: %w", topic, err)
	}
	durable := natsDurableName(group, topic)
	_, err = js.ConsumerInfo(topic, durable)
	if errors.Is(err, nats.ErrConsumerNotFound) {
		// Same configuration as nats.go would create on subscribe, with a fixed
		// deliver subject so that replicas racing here send identical requests.
		_, err = js.AddConsumer(topic, &nats.ConsumerConfig{
			Durable:        durable,
			Description:    "orderpaid consumer group " + group + " on " + topic,
			DeliverSubject: "_orderpaid.deliver." + durable,
			DeliverGroup:   durable,
			FilterSubject:  topic,
			DeliverPolicy:  nats.DeliverAllPolicy,
			AckPolicy:      nats.AckExplicitPolicy,
			AckWait:        natsAckWait,
			MaxAckPending:  natsMaxAckPending,
			ReplayPolicy:   nats.ReplayInstantPolicy,
		})
	}
	if err != nil {
		return fmt.Errorf("create durable consumer %s on stream %s: %w", durable, topic, err)
	}
	return nil
}

// natsSubscriber provisions the stream and the durable consumer before it
// subscribes, so that the consumer is never created by nats.go (which would
// delete it again when the subscription ends).
type natsSubscriber struct {
	*wnats.Subscriber
	group     string
	provision func(topic, group string) error
}

// Subscribe provisions topic for the subscriber's group, then joins the
// group's deliver group.
func (s natsSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := s.provision(topic, s.group); err != nil {
		return nil, fmt.Errorf("provision %s for %s: %w", topic, s.group, err)
	}
	return s.Subscriber.Subscribe(ctx, topic)
}

// MetadataOutboxWriteID is the metadata key of a message's outbox write id:
// the same on every relay of one outbox row, new on every write (see
// messages.MetadataOutboxWriteID, which the outbox sets).
const MetadataOutboxWriteID = "outbox_write_id"

// natsMsgIDPublisher sets Nats-Msg-Id from the outbox write id (see newNATS).
type natsMsgIDPublisher struct{ message.Publisher }

func (p natsMsgIDPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		id := m.Metadata.Get(MetadataOutboxWriteID)
		if id == "" {
			id = m.UUID
		}
		m.Metadata.Set(nats.MsgIdHdr, id)
	}
	return p.Publisher.Publish(topic, msgs...)
}
