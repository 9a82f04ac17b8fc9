package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/poison"
)

// The batch loop applies the router's failure policy to each message of a
// batch: a permanent failure goes to the poison queue alone and the batch
// goes on; a transient one stops the batch there, and the next read starts
// with it, so nothing is settled past an unsettled message.
func TestBatchLoopPoisonsAloneAndStopsAtATransientFailure(t *testing.T) {
	t.Parallel()
	const topic, group = "bulk", "bulk_group"
	pool, _ := pgtest.NewDatabase(t)
	b := postgresBroker(t, pool, topic, group)
	var ids []string
	var msgs []*message.Message
	for i := range 6 {
		m := message.NewMessage(fmt.Sprintf("msg-%d", i), []byte(`{}`))
		ids = append(ids, m.UUID)
		msgs = append(msgs, m)
	}
	// One transaction: the six become readable together (a row is readable
	// once every transaction begun before it has ended, server-wide).
	if err := b.Publisher.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var seen [][]string
	failedOnce := false
	handle := func(msgs []*message.Message) []error {
		mu.Lock()
		defer mu.Unlock()
		var batch []string
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			batch = append(batch, m.UUID)
			switch {
			case m.UUID == "msg-1":
				errs[i] = consumer.Permanent(errors.New("unknown order"))
			case m.UUID == "msg-3" && !failedOnce:
				failedOnce = true
				errs[i] = errors.New("database restarting")
			}
		}
		seen = append(seen, batch)
		return errs
	}
	ctx, cancel := context.WithCancel(t.Context())
	loop := &consumer.BatchLoop{
		Reader: broker.NewBatchReader(pool, topic, group, 10), Topic: topic, Group: group, Handle: handle,
		Poison: poison.NewStore(queries.New(pool)), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Poll: 10 * time.Millisecond, Backoff: 10 * time.Millisecond,
	}
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	// A row is readable once every transaction begun before it has ended on
	// the whole server: under the full test run another package may hold one
	// open for seconds, hence a deadline far above the usual wait.
	deadline := time.Now().Add(90 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a third read would show here
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	want := [][]string{ids, ids[3:]} // the whole batch, then from the transient failure on
	if len(seen) != 2 || !slices.Equal(seen[0], want[0]) || !slices.Equal(seen[1], want[1]) {
		t.Fatalf("batches handled %v, want %v", seen, want)
	}
	var poisoned []string
	rows, err := pool.Query(context.Background(), `SELECT message_id FROM poison_messages ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		poisoned = append(poisoned, id)
	}
	if !slices.Equal(poisoned, []string{"msg-1"}) {
		t.Errorf("poison queue holds %v, want [msg-1] once", poisoned)
	}
}

// The batch loop over the real postgres broker with the order_paid batch
// handler: thirty orders, every message delivered twice and a second event
// for a third of them, read twenty at a time; each effect once per order,
// and the handler was given batches, not single messages.
func TestBatchLoopAppliesOrderPaidOncePerOrder(t *testing.T) {
	t.Parallel()
	bn := setup(t, nil)
	b := postgresBroker(t, bn.pool, messages.TopicOrderPaid, consumer.HandlerOrderPaid)
	var orders []queries.Order
	var msgs []*message.Message
	for i := range 30 {
		o := bn.newOrder(t)
		orders = append(orders, o)
		m := orderPaid(t, o, fmt.Sprintf("evt_%d", i))
		msgs = append(msgs, m, m.Copy())
		if i%3 == 0 {
			msgs = append(msgs, orderPaid(t, o, fmt.Sprintf("evt_%d_again", i)))
		}
	}
	if err := b.Publisher.Publish(messages.TopicOrderPaid, msgs...); err != nil {
		t.Fatal(err)
	}
	reader, err := b.BatchReader(messages.TopicOrderPaid, consumer.HandlerOrderPaid, 20)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sizes []int
	batched := bn.c.Batched((*consumer.Consumers).HandleOrderPaidBatch) // the log of a batch in one statement
	loop := &consumer.BatchLoop{
		Reader: reader, Topic: messages.TopicOrderPaid, Group: consumer.HandlerOrderPaid,
		Handle: func(m []*message.Message) []error {
			mu.Lock()
			sizes = append(sizes, len(m))
			mu.Unlock()
			return batched(m)
		},
		Poison: poison.NewStore(bn.q), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Poll: 10 * time.Millisecond, Backoff: 10 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	deadline := time.Now().Add(90 * time.Second) // see above: the server-wide visibility rule
	for {
		var n int
		if err := bn.pool.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE handler = 'order_paid'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= len(msgs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, o := range orders {
		a := bn.audit(t, o.ID)
		if a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 {
			t.Fatalf("order %s: paid %d, commission %d, confirmation_enqueued %d; want 1 each (executions %d)",
				o.ID, a.Paid, a.Commission, a.ConfirmationEnqueued, a.ExecutionsOrderPaid)
		}
	}
	var nullOrder, failed int
	if err := bn.pool.QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE order_id IS NULL), count(*) FILTER (WHERE error IS NOT NULL) FROM executions`).Scan(&nullOrder, &failed); err != nil {
		t.Fatal(err)
	}
	if nullOrder != 0 || failed != 0 {
		t.Errorf("execution log: %d rows without their order, %d with an error; want 0 and 0", nullOrder, failed)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) == 0 || slices.Max(sizes) < 2 {
		t.Errorf("batch sizes %v: the handler was never given a batch", sizes)
	}
}

// Batched writes a batch's execution log in one statement, as each run
// would have written its own row: a run that named no order (a malformed
// payload) has no order id, a failed run its error, a good run neither.
func TestBatchedWritesTheExecutionLogOfTheBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	good := b.newOrder(t)
	unknown := good
	unknown.ID = uuid.New()
	msgs := []*message.Message{
		message.NewMessage("malformed", []byte(`{"order_id":`)),
		orderPaid(t, unknown, "evt_unknown"),
		orderPaid(t, good, "evt_good"),
	}
	errs := b.c.Batched((*consumer.Consumers).HandleOrderPaidBatch)(copies(msgs))
	if !consumer.IsPermanent(errs[0]) || !consumer.IsPermanent(errs[1]) || errs[2] != nil {
		t.Fatalf("answers %v: want permanent, permanent, nil", errs)
	}
	type row struct {
		msg      string
		hasOrder bool
		failed   bool
	}
	rows, err := b.pool.Query(context.Background(), `SELECT message_id, order_id IS NOT NULL, error IS NOT NULL FROM executions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.msg, &r.hasOrder, &r.failed); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := map[string]row{
		"malformed":  {"malformed", false, true},
		msgs[1].UUID: {msgs[1].UUID, true, true},
		msgs[2].UUID: {msgs[2].UUID, true, false},
	}
	if len(got) != len(want) {
		t.Fatalf("execution log %+v, want %d rows", got, len(want))
	}
	for _, r := range got {
		if want[r.msg] != r {
			t.Errorf("execution %+v, want %+v", r, want[r.msg])
		}
	}
}

// postgresBroker is a postgres broker on pool with topic provisioned for
// group, closed when the test ends.
func postgresBroker(t *testing.T, pool *pgxpool.Pool, topic, group string) *broker.Broker {
	t.Helper()
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerPostgres}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Provision(topic, group); err != nil {
		t.Fatal(err)
	}
	return b
}
