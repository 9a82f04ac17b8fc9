package backfill_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/ops/backfill"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// paidOrders creates n orders and marks them paid now, without any message:
// the orders a backfill finds.
func paidOrders(t testing.TB, pool *pgxpool.Pool, n int) []queries.Order {
	t.Helper()
	ctx := context.Background()
	q := queries.New(pool)
	orders := make([]queries.Order, n)
	for i := range orders {
		o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 1000, Currency: "BRL"})
		if err != nil {
			t.Fatal(err)
		}
		orders[i] = o
	}
	if _, err := pool.Exec(ctx, `UPDATE orders SET status = 'paid', paid_at = now()`); err != nil {
		t.Fatal(err)
	}
	return orders
}

// A chunk written in one statement is what the relay reads like any other
// outbox write: every order's order_paid reaches a subscriber of the broker,
// under its deterministic id, with the order id and the trace context of
// the backfill's span in its metadata. Each chunk is one transaction and one
// INSERT statement.
func TestBackfillChunkIsRelayedToTheBroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool, _ := pgtest.NewDatabase(t)
	const n = 25
	want := map[string]string{} // message id -> order id
	for _, o := range paidOrders(t, pool, n) {
		msg, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: o.AmountCents, Source: "backfill"})
		if err != nil {
			t.Fatal(err)
		}
		want[msg.UUID] = o.ID.String()
	}

	// A statement-level trigger counts the INSERT statements into the outbox.
	if _, err := pool.Exec(ctx, `
		CREATE TABLE outbox_inserts (at timestamptz NOT NULL DEFAULT now());
		CREATE FUNCTION count_outbox_insert() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO outbox_inserts DEFAULT VALUES; RETURN NULL; END $$;
		CREATE TRIGGER count_outbox_insert AFTER INSERT ON watermill_outbox
			FOR EACH STATEMENT EXECUTE FUNCTION count_outbox_insert();`); err != nil {
		t.Fatal(err)
	}

	tp := telemetry.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	runCtx, span := tp.Tracer("test").Start(ctx, "backfill run")
	res, err := backfill.Run(runCtx, pool, backfill.Config{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), BatchSize: 10})
	span.End()
	if err != nil || res.Enqueued != n {
		t.Fatalf("backfill = %+v, %v; want %d enqueued", res, err, n)
	}
	var txs, statements int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(DISTINCT transaction_id) FROM watermill_outbox),
		(SELECT count(*) FROM outbox_inserts)`).Scan(&txs, &statements); err != nil {
		t.Fatal(err)
	}
	if txs != 3 || statements != 3 {
		t.Errorf("outbox rows written in %d transactions and %d INSERT statements, want 3 and 3 (one per chunk of 10, 10, 5)", txs, statements)
	}

	b, err := broker.New(ctx, config.Config{Broker: config.BrokerPostgres}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const group = "backfilltest"
	if err := b.Provision(messages.TopicOrderPaid, group); err != nil {
		t.Fatal(err)
	}
	relay, err := outbox.NewRelay(pool, b.Publisher, watermill.NopLogger{}, outbox.RelayConfig{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = relay.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	sub, err := b.Subscriber(group)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := sub.Subscribe(ctx, messages.TopicOrderPaid)
	if err != nil {
		t.Fatal(err)
	}

	traceID := span.SpanContext().TraceID()
	for range n {
		var msg *message.Message
		select {
		case msg = <-ch:
		case <-time.After(15 * time.Second):
			t.Fatalf("%d order_paid messages not delivered within 15s", len(want))
		}
		orderID, ok := want[msg.UUID]
		if !ok {
			t.Fatalf("delivered %s: not one of the backfill's ids, or delivered twice", msg.UUID)
		}
		delete(want, msg.UUID)
		if got := msg.Metadata.Get(messages.MetadataOrderID); got != orderID {
			t.Errorf("message %s: order_id = %q, want %q", msg.UUID, got, orderID)
		}
		carried := trace.SpanContextFromContext(telemetry.ExtractMessage(context.Background(), msg))
		if carried.TraceID() != traceID {
			t.Errorf("message %s: trace %s in its metadata, want the backfill's %s", msg.UUID, carried.TraceID(), traceID)
		}
		msg.Ack()
	}
}

// BenchmarkBackfillChunk writes the order_paid of one chunk of 1,000 orders
// to the outbox, in one transaction: one statement for the chunk (what the
// backfill does) or one per order (one outbox.Publish each, as it did).
func BenchmarkBackfillChunk(b *testing.B) {
	pool, _ := pgtest.NewDatabase(b)
	paidOrders(b, pool, 1000)
	ctx := context.Background()
	page, err := queries.New(pool).OrderListPaidInRange(ctx, queries.OrderListPaidInRangeParams{
		PaidFrom: time.Now().Add(-time.Hour), PaidTo: time.Now().Add(time.Hour), AfterPaidAt: time.Now().Add(-2 * time.Hour), PageSize: 1000,
	})
	if err != nil || len(page) != 1000 {
		b.Fatalf("list 1000 paid orders: %d, %v", len(page), err)
	}
	b.Run("per-row", func(b *testing.B) {
		for b.Loop() {
			err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
				for _, o := range page {
					msg, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: o.AmountCents, Source: "backfill"})
					if err != nil {
						return err
					}
					if err := outbox.Publish(ctx, tx, messages.TopicOrderPaid, msg); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("set-based", func(b *testing.B) {
		for b.Loop() {
			if err := backfill.Enqueue(ctx, pool, page); err != nil {
				b.Fatal(err)
			}
		}
	})
}
