package retention_test

import (
	"fmt"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// On the postgres broker, the clean-up removes a topic's old messages that
// every consumer group has read, and nothing else: not what the slowest group
// has still to read, not a young message. Ten messages, group g1 read up to
// the 8th, group g2 up to the 5th, all old but the 3rd: the 1st, 2nd, 4th and
// 5th go. Without the every-group condition the 6th to 8th go too (lost for
// g2); without the cutoff, the 3rd.
func TestBrokerCleanupRemovesWhatEveryGroupHasRead(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerPostgres}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	const topic = "cleanup"
	sub, err := b.Subscriber("g1")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.(message.SubscribeInitializer).SubscribeInitialize(topic); err != nil {
		t.Fatal(err)
	}
	_ = sub.Close()
	for i := 1; i <= 10; i++ { // a transaction each
		if err := b.Publisher.Publish(topic, message.NewMessage(fmt.Sprint(i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, pool, `
		UPDATE watermill_cleanup SET created_at = created_at - interval '31 days' WHERE uuid <> '3';
		INSERT INTO watermill_offsets_cleanup (consumer_group, offset_acked, last_processed_transaction_id)
		SELECT g, "offset", transaction_id FROM watermill_cleanup, (VALUES ('g1', '8'), ('g2', '5')) AS p(g, at)
		WHERE uuid = p.at`)

	c, err := retention.NewCleaner(pool, retention.Config{BatchSize: 2, BrokerTopics: []string{topic, "no_such_topic"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.RunOnce(t.Context()); err != nil || got.BrokerMessages != 4 {
		t.Fatalf("removed %d broker messages (err %v), want 4", got.BrokerMessages, err)
	}
	if left := strings(t, pool, `SELECT uuid FROM watermill_cleanup ORDER BY transaction_id, "offset"`); left != "3,6,7,8,9,10" {
		t.Errorf("messages left: %s, want 3,6,7,8,9,10", left)
	}
	if got, err := c.RunOnce(t.Context()); err != nil || got.BrokerMessages != 0 {
		t.Errorf("a second run removed %d (err %v), want 0", got.BrokerMessages, err)
	}
}
