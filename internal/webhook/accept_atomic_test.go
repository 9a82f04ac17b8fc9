package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

var testSecret = []byte("whsec_test")

// acceptSetup is one test's database, an ingestor on it and a pending order
// of 100.00 BRL.
func acceptSetup(t *testing.T) (*pgxpool.Pool, *webhook.Ingestor, queries.Order) {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	o, err := order.Create(context.Background(), queries.New(pool), order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		t.Fatal(err)
	}
	return pool, webhook.NewIngestor(pool, testSecret), o
}

// deliverEvent sends one signed payment.succeeded for o, as the provider does.
func deliverEvent(in *webhook.Ingestor, eventID string, o queries.Order) (webhook.Result, error) {
	body := []byte(fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","data":{"order_id":%q,"amount_cents":%d}}`, eventID, o.ID, o.AmountCents))
	return in.Ingest(context.Background(), webhook.Sign(testSecret, time.Now(), body), body)
}

// count runs a count(*) query.
func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// orderPaidIDs returns the message ids of the order_paid rows in the outbox.
func orderPaidIDs(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT payload->>'uuid' FROM watermill_outbox WHERE payload->>'destination_topic' = $1 ORDER BY "offset"`, messages.TopicOrderPaid)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// The inbox row and the order_paid outbox row are one fact, written in one
// transaction. When the outbox write fails, nothing of the event is left: the
// provider's retry (it got a 5xx) is accepted as new and enqueues order_paid.
// Were the inbox committed on its own before the outbox write, the failed
// write would leave the event "already accepted" with no order_paid anywhere:
// every retry would answer already_applied and the payment would be lost.
func TestFailedOutboxWriteLeavesNoInboxRow(t *testing.T) {
	t.Parallel()
	pool, in, o := acceptSetup(t)
	refusal := pgtest.RefuseInserts(t, pool, "watermill_outbox", pgtest.AtInsert)

	if _, err := deliverEvent(in, "evt_1", o); err == nil {
		t.Fatal("the delivery succeeded although the outbox refused the order_paid row")
	}
	if refusal.Count(t) == 0 {
		t.Fatal("the outbox was never written: the test did not exercise the failed write")
	}
	if n := count(t, pool, "SELECT count(*) FROM webhook_inbox WHERE event_id = 'evt_1'"); n != 0 {
		t.Fatalf("after the failed outbox write the inbox holds %d row(s) for evt_1, want 0: the event is marked accepted with no order_paid", n)
	}

	refusal.Lift(t)
	res, err := deliverEvent(in, "evt_1", o)
	if err != nil {
		t.Fatalf("the provider's retry: %v", err)
	}
	if res.Outcome != effect.Applied {
		t.Errorf("the provider's retry answered %s, want %s: the failed attempt left the event accepted", res.Outcome, effect.Applied)
	}
	want, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: o.AmountCents, Source: "webhook:evt_1"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := orderPaidIDs(t, pool); len(ids) != 1 || ids[0] != want.UUID {
		t.Errorf("order_paid in the outbox = %v, want exactly [%s]", ids, want.UUID)
	}
}

// Two deliveries of one event race, deterministically: the first has written
// its inbox row and is held, uncommitted, at its outbox write (the test locks
// the outbox table); the second starts only then and must queue behind the
// first's inbox row. When the first commits, the second finds the event and
// answers already_applied without writing order_paid. An inbox checked with a
// SELECT before the INSERT lets the second see no row and enqueue order_paid
// a second time; a plain INSERT makes it fail instead of answering 2xx.
func TestConcurrentDuplicateWaitsForTheFirstDelivery(t *testing.T) {
	t.Parallel()
	pool, in, o := acceptSetup(t)
	var a, b struct {
		res webhook.Result
		err error
	}
	pgtest.Overlap(t, pool, "watermill_outbox",
		func() { a.res, a.err = deliverEvent(in, "evt_1", o) },
		func() { b.res, b.err = deliverEvent(in, "evt_1", o) })

	if a.err != nil || b.err != nil {
		t.Fatalf("deliveries: first err = %v, second err = %v; want both accepted (a duplicate is answered 2xx)", a.err, b.err)
	}
	if a.res.Outcome != effect.Applied || b.res.Outcome != effect.AlreadyApplied {
		t.Errorf("outcomes: first %s, second %s; want %s and %s", a.res.Outcome, b.res.Outcome, effect.Applied, effect.AlreadyApplied)
	}
	if ids := orderPaidIDs(t, pool); len(ids) != 1 {
		t.Errorf("order_paid rows in the outbox = %d, want 1", len(ids))
	}
	if n := count(t, pool, "SELECT count(*) FROM webhook_inbox"); n != 1 {
		t.Errorf("inbox rows = %d, want 1", n)
	}
}
