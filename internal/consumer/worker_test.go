package consumer_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// bundle is one test's world: its own database, its own notification
// provider, consumers wired to both.
type bundle struct {
	pool     *pgxpool.Pool
	q        *queries.Queries
	provider *fakes.Notifier
	gateway  *fakes.Gateway
	gwURL    string        // the fakes' base URL
	faults   *fault.Set    // armed by the tests, c's
	guards   *switches.Set // the guards switched off in c (nil: none)
	c        *consumer.Consumers
}

// setup builds a bundle whose consumers have the guards of off switched
// off (nil: every guard on), wired as internal/app/worker.go wires them
// (switches.Consumers, with no broker for the outbox's mistake: see
// withDirect), with a fault set the test arms.
func setup(t *testing.T, off *switches.Set) *bundle {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	provider := fakes.NewNotifier()
	gateway := fakes.NewGateway(fakes.GatewayConfig{})
	srv := httptest.NewServer(fakes.New(gateway, provider))
	t.Cleanup(srv.Close)
	faults := fault.New(nil)
	b := &bundle{pool: pool, q: queries.New(pool), provider: provider, gateway: gateway, gwURL: srv.URL, faults: faults, guards: off}
	b.c = b.consumers(nil)
	return b
}

// consumers builds the bundle's consumers, wired as internal/app/worker.go
// wires them: every guard of b.guards off, the outbox's mistake publishing
// to direct.
func (b *bundle) consumers(direct message.Publisher) *consumer.Consumers {
	c := consumer.NewConsumers(b.pool, notify.NewClient(b.gwURL, nil)).
		WithGateway(payment.NewGatewayClient(b.gwURL, nil)).WithFaults(b.faults)
	return switches.Consumers(c, b.guards, direct)
}

// routed is the per-message handler h as internal/app/worker.go's router
// runs it: held (HoldAfterCommit) when guards can be off (b.guards not
// nil), as is.
func (b *bundle) routed(h func(*message.Message) error) func(*message.Message) error {
	if b.guards == nil {
		return h
	}
	return held(h)
}

// held wraps a per-message handler as internal/app/worker.go's router does
// with a guard switchable (switches.HoldAfterCommit): what the outbox's
// mistake was given is published once h returned nil.
func held(h func(*message.Message) error) func(*message.Message) error {
	run := switches.HoldAfterCommit(func(msg *message.Message) ([]*message.Message, error) { return nil, h(msg) })
	return func(msg *message.Message) error {
		_, err := run(msg)
		return err
	}
}

// newOrder creates a pending order of 100.00 BRL with an affiliate.
func (b *bundle) newOrder(t *testing.T) queries.Order {
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
func orderPaid(t *testing.T, o queries.Order, eventID string) *message.Message {
	t.Helper()
	msg, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: o.AmountCents, Source: "webhook:" + eventID})
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

func (b *bundle) audit(t *testing.T, id uuid.UUID) queries.AuditOrderRow {
	t.Helper()
	a, err := b.q.AuditOrder(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// outboxConfirmation returns the order_confirmed message the order_paid
// handler wrote to the outbox, as the relay would deliver it.
func outboxConfirmation(t *testing.T, o queries.Order) *message.Message {
	t.Helper()
	msg, err := messages.NewOrderConfirmed(o.ID)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}
