package reprocess_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/ops/reprocess"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// bundle is a database holding one paid order whose order_paid and
// order_confirmed went through the outbox.
type bundle struct {
	pool       *pgxpool.Pool
	order      queries.Order
	paid, conf *message.Message
}

func setup(t *testing.T) bundle {
	t.Helper()
	ctx := context.Background()
	pool, _ := pgtest.NewDatabase(t)
	o, err := order.Create(ctx, queries.New(pool), order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		t.Fatal(err)
	}
	paid, _ := messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: 10000, Source: "webhook:evt_1"})
	conf, _ := messages.NewOrderConfirmed(o.ID)
	err = postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, o, err = order.MarkPaid(ctx, queries.New(tx), o.ID, paid.UUID); err != nil {
			return err
		}
		if err := outbox.Publish(ctx, tx, messages.TopicOrderPaid, paid); err != nil {
			return err
		}
		return outbox.Publish(ctx, tx, messages.TopicOrderConfirmed, conf)
	})
	if err != nil {
		t.Fatal(err)
	}
	return bundle{pool: pool, order: o, paid: paid, conf: conf}
}

func (b bundle) outboxRows(t *testing.T) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), "SELECT count(*) FROM watermill_outbox").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// age moves everything back by eight days, past the default window.
func (b bundle) age(t *testing.T) {
	t.Helper()
	if _, err := b.pool.Exec(context.Background(), `
		UPDATE watermill_outbox SET created_at = created_at - interval '8 days';
		UPDATE orders SET paid_at = paid_at - interval '8 days';
		UPDATE poison_messages SET created_at = created_at - interval '8 days';`); err != nil {
		t.Fatal(err)
	}
}

func TestDryRunListsThePlanAndWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	before := b.outboxRows(t)
	var out bytes.Buffer
	opts := reprocess.Options{DryRun: true, Out: &out}
	if err := reprocess.Order(ctx, b.pool, b.order.ID, opts); err != nil {
		t.Fatal(err)
	}
	if err := reprocess.Message(ctx, b.pool, b.conf.UUID, opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"order_paid", "order_confirmed", b.conf.UUID, b.order.ID.String(), "replay", "dry run: nothing written"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan does not mention %q:\n%s", want, out.String())
		}
	}
	if after := b.outboxRows(t); after != before {
		t.Errorf("dry run wrote %d outbox rows", after-before)
	}
}

func TestPastTheWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("order_confirmed is refused: its inbox row and provider key may be gone", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.age(t)
		before := b.outboxRows(t)
		var out bytes.Buffer
		err := reprocess.Message(ctx, b.pool, b.conf.UUID, reprocess.Options{Out: &out})
		if !errors.Is(err, reprocess.ErrRefused) {
			t.Fatalf("err = %v, want ErrRefused", err)
		}
		if after := b.outboxRows(t); after != before || !strings.Contains(out.String(), "REFUSED") {
			t.Errorf("wrote %d rows; plan:\n%s", after-before, out.String())
		}
		if err := reprocess.Message(ctx, b.pool, b.conf.UUID, reprocess.Options{Force: true}); err != nil {
			t.Fatalf("with Force: %v", err)
		}
		if after := b.outboxRows(t); after != before+1 {
			t.Errorf("with Force wrote %d rows, want 1", after-before)
		}
	})

	t.Run("order_paid is replayed: the state check and the ledger key never expire", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.age(t)
		before := b.outboxRows(t)
		var out bytes.Buffer
		if err := reprocess.Message(ctx, b.pool, b.paid.UUID, reprocess.Options{Out: &out}); err != nil {
			t.Fatal(err)
		}
		if err := reprocess.Order(ctx, b.pool, b.order.ID, reprocess.Options{Out: &out}); err != nil {
			t.Fatal(err)
		}
		if after := b.outboxRows(t); after != before+2 || !strings.Contains(out.String(), "past the window") {
			t.Errorf("wrote %d rows, want 2; plan:\n%s", after-before, out.String())
		}
	})
}

func TestPoisonQueueIsReplayedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	q := queries.New(b.pool)
	if err := q.PoisonInsert(ctx, queries.PoisonInsertParams{
		Topic: messages.TopicOrderConfirmed, Handler: "order_confirmed", MessageID: b.conf.UUID,
		Payload: b.conf.Payload, Metadata: []byte(`{"order_id":"` + b.order.ID.String() + `"}`), Reason: "provider answered 401",
	}); err != nil {
		t.Fatal(err)
	}
	for run, want := range []int{1, 0} {
		n, err := reprocess.Poison(ctx, b.pool, reprocess.Options{})
		if err != nil || n != want {
			t.Errorf("run %d replayed %d (err %v), want %d", run+1, n, err, want)
		}
	}
}
