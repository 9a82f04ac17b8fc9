package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Kafka's exactly-once, and where it stops. A consume-transform-produce
// loop in Kafka transactions reads an input topic, and for each record
// e-mails the order's customer (the effect outside Kafka) and writes an
// output record; its consumed offsets commit in the same transaction as its
// output. One instance pauses before it commits (a GC pause, a partition);
// the next one, with the same transactional.id, fences it and does the
// work again. Kafka keeps its promise: a read_committed reader sees each
// output record once. The e-mail is not Kafka's: it went out twice, and only
// the provider's key makes the second one a no-op.

const eosOrders = 3

func kafkaExactlyOnceIsNotEnough() *Scenario {
	return &Scenario{
		Name: "kafka-exactly-once-is-not-enough",
		Summary: "on Kafka, a consume-transform-produce in Kafka transactions (transactional.id, read_committed) e-mails " +
			"each order and writes an output record; it pauses before its commit, and the next instance with the same " +
			"transactional.id fences it and does the work again: each output record is in Kafka once, each e-mail was sent twice",
		Repeated: "a transaction fenced after its e-mails, its input read again",
		Orders:   eosOrders,
		Broker:   config.BrokerKafka,
		BrokerReason: "it shows what Kafka's own transactions guarantee, and that the guarantee ends at Kafka; " +
			"the e-mail's guard is the same on every broker (worker-restart, broker-redelivery)",
		Protected: Expect{Checks: []Check{
			eq(RecordsCommitted, eosOrders), eq(RecordsWritten, 2*eosOrders), eq(Notified, eosOrders),
		}},
		Without: map[string]Expect{
			effect.GuardProviderKey: {
				Damage: "every e-mail sent twice, while a read_committed reader sees each output record once: " +
					"Kafka's exactly-once did not reach the provider",
				Checks: []Check{eq(RecordsCommitted, eosOrders), eq(RecordsWritten, 2*eosOrders), eq(Notified, 2*eosOrders)},
			},
		},
		Settled: func(c Counts) bool { return c.RecordsCommitted >= eosOrders },
		Run: func(ctx context.Context, s *Stage) error {
			if err := s.StartFakes(ctx); err != nil {
				return err
			}
			if err := s.StartAPI(ctx); err != nil {
				return err
			}
			loop, err := newTransformLoop(ctx, s)
			if err != nil {
				return err
			}
			defer loop.close()
			for range eosOrders {
				id, err := s.NewOrder(ctx)
				if err != nil {
					return err
				}
				if err := loop.input(ctx, id); err != nil {
					return err
				}
			}
			first, err := loop.instance()
			if err != nil {
				return err
			}
			defer first.Close()
			if err := loop.transform(ctx, first); err != nil {
				return fmt.Errorf("first instance: %w", err)
			}
			s.Logf("first instance: %d e-mails sent, %d records written in its open transaction; it pauses before committing", eosOrders, eosOrders)
			first.Client().LeaveGroup() // the pause outlasts its membership: the next instance gets the partition

			next, err := loop.instance() // registers the same transactional.id: the first one's epoch is fenced
			if err != nil {
				return err
			}
			defer next.Close()
			if err := loop.transform(ctx, next); err != nil {
				return fmt.Errorf("next instance: %w", err)
			}
			if committed, err := next.End(ctx, kgo.TryCommit); !committed || err != nil {
				return fmt.Errorf("next instance: transaction not committed: %v", err)
			}
			s.Logf("next instance: e-mails sent, records written, offsets and records committed in one transaction")

			committed, err := first.End(ctx, kgo.TryCommit)
			if committed || !errors.Is(err, kerr.ProducerFenced) {
				return fmt.Errorf("first instance woke and committed = %v (%v), want it fenced (PRODUCER_FENCED)", committed, err)
			}
			s.Logf("first instance woke and tried to commit: %v", err)
			return loop.countOutput(ctx)
		},
	}
}

// transformLoop is the scenario's consume-transform-produce: input and
// output topics, group and transactional.id under the stage's broker
// prefix (deleted with the stage's topics and groups).
type transformLoop struct {
	s                     *Stage
	brokers               []string
	in, out, group, txnID string
	admin                 *kgo.Client
	notifier              *notify.Client
	providerKey           func(messageID string) string
}

func newTransformLoop(ctx context.Context, s *Stage) (*transformLoop, error) {
	addrs, err := brokerAddrs(s.cfg.Env)
	if err != nil {
		return nil, err
	}
	l := &transformLoop{
		s: s, brokers: addrs.KafkaBrokers,
		in: s.brokerPrefix + "eos_input", out: s.brokerPrefix + "eos_output",
		group: s.brokerPrefix + "eos_transform", txnID: s.brokerPrefix + "eos_transform",
		notifier:    notify.NewClient(s.FakesURL(), &http.Client{Timeout: 10 * time.Second}),
		providerKey: notify.MessageKey,
	}
	if s.without == effect.GuardProviderKey {
		l.providerKey = notify.FreshKey // the mistake, as effect.Protections names it
	}
	if l.admin, err = kgo.NewClient(kgo.SeedBrokers(l.brokers...)); err != nil {
		return nil, err
	}
	for _, topic := range []string{l.in, l.out} {
		if _, err := kadm.NewClient(l.admin).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
			l.admin.Close()
			return nil, fmt.Errorf("create Kafka topic %s: %w", topic, err)
		}
	}
	return l, nil
}

func (l *transformLoop) close() { l.admin.Close() }

// input writes one order's record to the input topic: key the order id,
// the message id in a header (the provider key of its e-mail).
func (l *transformLoop) input(ctx context.Context, orderID uuid.UUID) error {
	value, _ := json.Marshal(map[string]string{"order_id": orderID.String()})
	r := &kgo.Record{Topic: l.in, Key: []byte(orderID.String()), Value: value,
		Headers: []kgo.RecordHeader{{Key: "message_id", Value: []byte(uuid.NewString())}}}
	return l.admin.ProduceSync(ctx, r).FirstErr()
}

// instance is one instance of the loop: a member of the group that reads
// committed records only, and a transactional producer whose transactions
// carry its consumed offsets (franz-go's GroupTransactSession).
func (l *transformLoop) instance() (*kgo.GroupTransactSession, error) {
	return kgo.NewGroupTransactSession(
		kgo.SeedBrokers(l.brokers...),
		kgo.TransactionalID(l.txnID),
		kgo.ConsumerGroup(l.group),
		kgo.ConsumeTopics(l.in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(l.out),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
}

// transform reads every input record from the group's committed offset,
// begins a transaction, and for each record sends its e-mail and writes
// its output record. It does not end the transaction.
func (l *transformLoop) transform(ctx context.Context, sess *kgo.GroupTransactSession) error {
	var records []*kgo.Record
	deadline := time.Now().Add(20 * time.Second)
	for len(records) < eosOrders {
		if time.Now().After(deadline) {
			return fmt.Errorf("read %d of %d input records within 20s", len(records), eosOrders)
		}
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		records = append(records, sess.PollFetches(pollCtx).Records()...)
		cancel()
	}
	if err := sess.Begin(); err != nil {
		return err
	}
	for _, r := range records {
		var in struct {
			OrderID uuid.UUID `json:"order_id"`
		}
		if err := json.Unmarshal(r.Value, &in); err != nil {
			return fmt.Errorf("input record at offset %d: %w", r.Offset, err)
		}
		var messageID string
		for _, h := range r.Headers {
			if h.Key == "message_id" {
				messageID = string(h.Value)
			}
		}
		if _, err := l.notifier.SendOrderConfirmed(ctx, l.providerKey(messageID), in.OrderID); err != nil {
			return err
		}
		if err := sess.ProduceSync(ctx, &kgo.Record{Key: r.Key, Value: r.Value}).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

// countOutput reads the output topic twice, as a read_committed and as a
// read_uncommitted consumer, and records both counts on the stage.
func (l *transformLoop) countOutput(ctx context.Context) error {
	count := func(level kgo.IsolationLevel) (int64, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(l.brokers...), kgo.ConsumeTopics(l.out), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		var n int64
		for quiet := 0; quiet < 3; { // until three polls in a row bring nothing
			pollCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			got := len(cl.PollFetches(pollCtx).Records())
			cancel()
			if got == 0 {
				quiet++
			} else {
				quiet, n = 0, n+int64(got)
			}
		}
		return n, nil
	}
	committed, err := count(kgo.ReadCommitted())
	if err != nil {
		return err
	}
	written, err := count(kgo.ReadUncommitted())
	if err != nil {
		return err
	}
	l.s.kafkaRecordsCommitted, l.s.kafkaRecordsWritten = committed, written
	l.s.Logf("output topic %s: %d records seen read_committed, %d written (read_uncommitted)", l.out, committed, written)
	return nil
}
