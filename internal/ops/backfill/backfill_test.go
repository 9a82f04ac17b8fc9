package backfill_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/ops/backfill"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A backfill is repetition on purpose: run twice over orders that were
// already handled, it enqueues order_paid again and again, and no effect
// changes.
func TestBackfillTwiceChangesNoEffect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := pgtest.NewDatabase(t)
	q := queries.New(pool)
	srv := httptest.NewServer(fakes.New(fakes.NewGateway(fakes.GatewayConfig{}), fakes.NewNotifier()))
	t.Cleanup(srv.Close)
	c := consumer.NewConsumers(pool, notify.NewClient(srv.URL, nil))

	const n = 7
	var orders []queries.Order
	for i := 0; i < n; i++ {
		o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 1000, Currency: "BRL"})
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: o.AmountCents, Source: "webhook:evt_" + o.ID.String()})
		if err := c.HandleOrderPaid(msg); err != nil {
			t.Fatal(err)
		}
		orders = append(orders, o)
	}
	before := outboxCount(t, pool)
	cfg := backfill.Config{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), BatchSize: 3}

	var dry strings.Builder
	cfg.DryRun, cfg.Progress = true, &dry
	if res, err := backfill.Run(ctx, pool, cfg); err != nil || res.Matched != n || res.Enqueued != 0 {
		t.Fatalf("dry run = %+v, %v; want %d matched, 0 enqueued", res, err, n)
	}
	if got := outboxCount(t, pool); got != before {
		t.Fatalf("dry run wrote %d outbox rows", got-before)
	}

	var progress strings.Builder
	cfg.DryRun, cfg.Progress = false, &progress
	for run := 1; run <= 2; run++ {
		if res, err := backfill.Run(ctx, pool, cfg); err != nil || res.Enqueued != n {
			t.Fatalf("run %d = %+v, %v; want %d enqueued", run, res, err, n)
		}
	}
	if !strings.Contains(progress.String(), "7/7 orders (100%)") || !strings.Contains(progress.String(), "3/7 orders (42%)") {
		t.Errorf("progress output lacks per-batch lines:\n%s", progress.String())
	}
	if got := outboxCount(t, pool); got != before+2*n {
		t.Fatalf("outbox grew by %d, want %d", got-before, 2*n)
	}

	// Deliver every backfilled message, as the relay would.
	for _, msg := range backfilled(t, pool) {
		if err := c.HandleOrderPaid(msg); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range orders {
		a, err := q.AuditOrder(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if a.ExecutionsOrderPaid != 3 || a.Paid != 1 || a.Commission != 1 || a.ConfirmationEnqueued != 1 {
			t.Errorf("order %s: executions=%d paid=%d commission=%d confirmation_enqueued=%d, want 3, 1, 1, 1",
				o.ID, a.ExecutionsOrderPaid, a.Paid, a.Commission, a.ConfirmationEnqueued)
		}
	}
}

func outboxCount(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM watermill_outbox").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// backfilled unwraps the order_paid messages the backfill wrote to the outbox.
func backfilled(t *testing.T, pool *pgxpool.Pool) []*message.Message {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT payload::text FROM watermill_outbox ORDER BY \"offset\"")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var msgs []*message.Message
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var env struct {
			Topic   string `json:"destination_topic"`
			UUID    string `json:"uuid"`
			Payload []byte `json:"payload"`
		}
		if err := json.Unmarshal([]byte(raw), &env); err != nil {
			t.Fatal(err)
		}
		if env.Topic == messages.TopicOrderPaid && strings.Contains(string(env.Payload), `"source":"backfill"`) {
			m := message.NewMessage(env.UUID, env.Payload)
			m.SetContext(context.Background())
			msgs = append(msgs, m)
		}
	}
	return msgs
}
