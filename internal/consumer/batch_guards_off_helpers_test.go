package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Helpers of batch_guards_off_test.go: the batch handlers wired as
// internal/app/worker.go wires them, the deliveries, the twins handled one
// by one, and what the tests read back.

// paidBatch is the order_paid batch handler of b, wired as
// internal/app/worker.go wires it: its execution log in one statement
// (Batched) and, while a consumer guard of b.guards is off, each message
// handed to HandleOrderPaid in turn, held for the outbox's mistake
// (switches.Batches).
func (b *bundle) paidBatch() func([]*message.Message) []error {
	return switches.Batches(b.guards, b.c.Batched((*consumer.Consumers).HandleOrderPaidBatch), b.c.HandleOrderPaid)
}

// confirmedBatch is the order_confirmed batch handler of b, wired as
// paidBatch is, HandleOrderConfirmed its per-message handler.
func (b *bundle) confirmedBatch() func([]*message.Message) []error {
	return switches.Batches(b.guards, b.c.Batched((*consumer.Consumers).HandleOrderConfirmedBatch), b.c.HandleOrderConfirmed)
}

// recordingPublisher is the broker the outbox-off mistake publishes to
// directly: it records each Publish call.
type recordingPublisher struct {
	mu    sync.Mutex
	calls [][]*message.Message
}

func (p *recordingPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, msgs)
	return nil
}

func (p *recordingPublisher) Close() error { return nil }

// callCount is the number of Publish calls so far.
func (p *recordingPublisher) callCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// published counts the confirmations of o published directly.
func (p *recordingPublisher) published(t *testing.T, o queries.Order) int {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, call := range p.calls {
		for _, m := range call {
			c, err := messages.DecodeOrderConfirmed(m.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if c.OrderID == o.ID {
				n++
			}
		}
	}
	return n
}

// withDirect returns b with consumers that have b.guards off and publish
// to pub where the outbox is off (switches.Consumers' direct broker).
func withDirect(b *bundle, pub message.Publisher) *bundle {
	cp := *b
	cp.c = b.consumers(pub)
	return &cp
}

// delivery is one message of the sequence: which order (0, 1, 2 for A, B,
// C) and which provider event produced it.
type delivery struct {
	order int
	event string
}

// stockOrders makes three orders of 2 units of one SKU each (100 in stock).
func stockOrders(t *testing.T, b *bundle, prefix string) []queries.Order {
	t.Helper()
	out := make([]queries.Order, 3)
	for i := range out {
		out[i] = newStockOrder(t, b, fmt.Sprintf("%s-%d", prefix, i), 100, 2)
	}
	return out
}

// transactions counts the distinct transactions that wrote the rows of
// table for orders.
func transactions(t *testing.T, b *bundle, table string, orders []queries.Order) int {
	t.Helper()
	ids := make([]uuid.UUID, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	var n int
	err := b.pool.QueryRow(context.Background(),
		`SELECT count(DISTINCT xmin::text) FROM `+pgx.Identifier{table}.Sanitize()+` WHERE order_id = ANY($1)`, ids).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sameAsPerMessage checks that each order ended as its twin, handled one
// message at a time, did: the same audit, the same answers.
func sameAsPerMessage(t *testing.T, b *bundle, handler string, orders, twins []queries.Order) {
	t.Helper()
	for i := range orders {
		if got, want := b.audit(t, orders[i].ID), b.audit(t, twins[i].ID); !reflect.DeepEqual(got, want) {
			t.Errorf("order %c, audit: batch %+v\nper-message %+v", 'A'+i, got, want)
		}
		if got, want := b.answers(t, handler, orders[i]), b.answers(t, handler, twins[i]); !slices.Equal(got, want) {
			t.Errorf("order %c, answers: batch %q\nper-message %q", 'A'+i, got, want)
		}
	}
}

// answers lists, sorted, the answers each execution of handler for o
// recorded, and whether it failed.
func (b *bundle) answers(t *testing.T, handler string, o queries.Order) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT outcomes::text || CASE WHEN error IS NULL THEN '' ELSE ' failed' END
		FROM executions WHERE order_id = $1 AND handler = $2`, o.ID, handler)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func runPaidFirst(t *testing.T, b *bundle, orders []queries.Order) {
	t.Helper()
	wantOnlyInjected(t, handleBatch(b.paidBatch(), paidMessages(t, orders, paidBatches[0])), -1)
}

func runPaidRest(t *testing.T, b *bundle, orders []queries.Order) {
	t.Helper()
	for _, batch := range paidBatches[1:] {
		wantOnlyInjected(t, handleBatch(b.paidBatch(), paidMessages(t, orders, batch)), -1)
	}
}

func runPaidOneByOne(t *testing.T, b *bundle, orders []queries.Order) {
	t.Helper()
	for _, batch := range paidBatches {
		for _, m := range paidMessages(t, orders, batch) {
			if err := deliver(b.routed(b.c.HandleOrderPaid), m); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func paidMessages(t *testing.T, orders []queries.Order, batch []delivery) []*message.Message {
	t.Helper()
	var msgs []*message.Message
	for _, d := range batch {
		msgs = append(msgs, orderPaid(t, orders[d.order], d.event))
	}
	return msgs
}

// handleBatch hands the batch handler fresh copies of msgs and returns its
// answers.
func handleBatch(handle func([]*message.Message) []error, msgs []*message.Message) []error {
	return handle(copies(msgs))
}

// wantOnlyInjected fails the test unless the message at index failed with
// the injected fault (-1: none) and every other one succeeded.
func wantOnlyInjected(t *testing.T, errs []error, index int) {
	t.Helper()
	for i, err := range errs {
		if i == index {
			if !errors.Is(err, fault.ErrInjected) {
				t.Fatalf("message %d: %v, want the injected fault", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
}

// sentTo counts the e-mails the fake provider really sent for o.
func sentTo(b *bundle, o queries.Order) int {
	n := 0
	for _, s := range b.provider.Notifications() {
		if s.OrderID == o.ID.String() {
			n++
		}
	}
	return n
}

// providerCalls counts the provider's answers logged for o: one per call.
func providerCalls(t *testing.T, b *bundle, o queries.Order) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM notification_log WHERE order_id = $1`, o.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// confirmedMessages returns the order_confirmed of orders[i] for each i
// of batch (one id per order: the same index twice is a copy).
func confirmedMessages(t *testing.T, orders []queries.Order, batch []int) []*message.Message {
	t.Helper()
	var msgs []*message.Message
	for _, i := range batch {
		msgs = append(msgs, outboxConfirmation(t, orders[i]))
	}
	return msgs
}
