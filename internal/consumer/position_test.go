package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A worker that dies after handling a batch, before the position commits,
// repeats the batch. With the position separate (the default), the
// effects had committed: the repeat meets the guards, every effect stays
// at 1, and the execution log holds both runs of every message. With the
// position committed with the effects (CONSUMER_POSITION=with-effects),
// the death took the effects and the log with it: nothing happened, the
// batch is handled again as if for the first time, and each message has
// one execution.
func TestPositionWithEffectsLeavesNothingOfABatchCutShort(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		withEffects bool
		// after the cut: orders paid, and executions per message once the
		// batch has been handled again
		paidAfterCut, executionsPerMessage int
	}{
		{"separate", false, 10, 2},
		{"with-effects", true, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bn := setup(t, nil)
			b := postgresBroker(t, bn.pool, messages.TopicOrderPaid, consumer.HandlerOrderPaid)
			var msgs []*message.Message
			for i := range 10 {
				msgs = append(msgs, orderPaid(t, bn.newOrder(t), fmt.Sprintf("evt_%d", i)))
			}
			if err := b.Publisher.Publish(messages.TopicOrderPaid, msgs...); err != nil {
				t.Fatal(err)
			}
			reader := broker.NewBatchReader(bn.pool, messages.TopicOrderPaid, consumer.HandlerOrderPaid, 10)
			if tt.withEffects {
				reader = reader.WithEffects()
			}
			batched := bn.c.Batched((*consumer.Consumers).HandleOrderPaidBatch)

			// The cut: the batch is handled in full, then the worker dies
			// before the position commits. With the position separate that
			// is a handler that settles nothing (the position does not
			// move); with it in the effects' transaction, the read's
			// connection closing under it, as a SIGKILL closes it.
			read := readAll(t, reader, len(msgs), func(m []*message.Message) int {
				for i, err := range batched(m) {
					if err != nil {
						t.Errorf("message %d: %v", i, err)
					}
				}
				if tx, ok := postgres.EnclosingTx(m[0].Context()); ok {
					_ = tx.Conn().Close(context.Background())
					return len(m)
				}
				if tt.withEffects {
					t.Error("with-effects: the messages carry no enclosing transaction")
				}
				return 0
			})
			if read != len(msgs) {
				t.Fatalf("the first read handed out %d messages, want %d", read, len(msgs))
			}
			if got := count(t, bn, `SELECT count(*) FROM orders WHERE status = 'paid'`); got != tt.paidAfterCut {
				t.Errorf("after the cut %d orders are paid, want %d", got, tt.paidAfterCut)
			}

			// The batch again, this time committed.
			if read := readAll(t, reader, len(msgs), func(m []*message.Message) int {
				batched(m)
				return len(m)
			}); read != len(msgs) {
				t.Fatalf("the second read handed out %d messages, want the same %d again", read, len(msgs))
			}
			for _, m := range msgs {
				var o queries.AuditOrderRow
				id := orderIDOf(t, m)
				o = bn.audit(t, id)
				if o.Paid != 1 || o.Commission != 1 || o.ConfirmationEnqueued != 1 {
					t.Errorf("order %s: paid %d, commission %d, confirmation_enqueued %d; want 1 each", id, o.Paid, o.Commission, o.ConfirmationEnqueued)
				}
				if o.ExecutionsOrderPaid != int64(tt.executionsPerMessage) {
					t.Errorf("order %s: %d executions, want %d", id, o.ExecutionsOrderPaid, tt.executionsPerMessage)
				}
			}
			// And the position moved: nothing is read a third time.
			if n, _, err := reader.Read(context.Background(), func(m []*message.Message) int {
				t.Errorf("a third read handed out %d message(s)", len(m))
				return len(m)
			}); err != nil || n != 0 {
				t.Errorf("third read: %d, %v; want 0, nil", n, err)
			}
		})
	}
}

// readAll reads until a read hands out messages (a row is readable only
// once every transaction begun before it has ended, on the whole server:
// under a loaded test run the first reads may find nothing) and returns
// how many that read handed out. A failed read after the handler ran (the
// cut) counts as a read.
func readAll(t *testing.T, r *broker.BatchReader, want int, handle func([]*message.Message) int) int {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		handed := 0
		n, _, err := r.Read(context.Background(), func(m []*message.Message) int {
			handed = len(m)
			return handle(m)
		})
		if handed > 0 {
			return handed
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if n == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatalf("no read handed out the %d messages within 90s", want)
	return 0
}

func count(t *testing.T, bn *bundle, sql string) int {
	t.Helper()
	var n int
	if err := bn.pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func orderIDOf(t *testing.T, m *message.Message) uuid.UUID {
	t.Helper()
	p, err := messages.DecodeOrderPaid(m.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return p.OrderID
}
