package worker_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/db"
	"github.com/orderpaid/orderpaid/internal/event"
	"github.com/orderpaid/orderpaid/internal/fakes"
	"github.com/orderpaid/orderpaid/internal/faultpoint"
	"github.com/orderpaid/orderpaid/internal/guard"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/pgtest"
	"github.com/orderpaid/orderpaid/internal/worker"
)

// bundle is one test's world: its own database, its own notification
// provider, consumers wired to both.
type bundle struct {
	pool     *pgxpool.Pool
	q        *db.Queries
	provider *fakes.Notifier
	faults   *faultpoint.Set
	c        *worker.Consumers
}

func setup(t *testing.T, guards guard.Set) *bundle {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	provider := fakes.NewNotifier()
	srv := httptest.NewServer(fakes.New(fakes.NewGateway(fakes.GatewayConfig{}), provider))
	t.Cleanup(srv.Close)
	faults := faultpoint.New(nil)
	return &bundle{
		pool: pool, q: db.New(pool), provider: provider, faults: faults,
		c: worker.NewConsumers(pool, notify.NewClient(srv.URL, nil), nil, faults, guards),
	}
}

// newOrder creates a pending order of 100.00 BRL with an affiliate.
func (b *bundle) newOrder(t *testing.T) db.Order {
	t.Helper()
	o, err := order.Create(context.Background(), b.q, order.NewOrder{
		CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL",
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// orderPaid builds the order_paid a given provider event produces.
func orderPaid(t *testing.T, o db.Order, eventID string) *message.Message {
	t.Helper()
	msg, err := event.NewOrderPaid(event.OrderPaid{OrderID: o.ID, AmountCents: o.AmountCents, Source: "webhook:" + eventID})
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// deliver hands the handler a fresh copy of msg, as a broker redelivery does.
func deliver(h func(*message.Message) error, msg *message.Message) error {
	c := msg.Copy()
	c.SetContext(context.Background())
	return h(c)
}

func (b *bundle) audit(t *testing.T, id uuid.UUID) db.AuditOrderRow {
	t.Helper()
	a, err := b.q.AuditOrder(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// outboxConfirmation returns the order_confirmed message the order_paid
// handler wrote to the outbox, as the relay would deliver it.
func outboxConfirmation(t *testing.T, o db.Order) *message.Message {
	t.Helper()
	msg, err := event.NewOrderConfirmed(o.ID)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}
