package retention_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// Once the window has passed and the cleaner has removed the inbox rows,
// every copy of every message arrives again: the webhook, order_paid and
// order_confirmed. The inboxes no longer recognise them, and still each
// effect stays at one, because the guards that never expire answer: the
// state check, the unique ledger key and the provider's idempotency key.
// (A real provider forgets its keys after a while too: that is why
// reprocess refuses to replay an order_confirmed older than the window.)
func TestCorrectnessDoesNotDependOnTheInboxAfterTheWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := pgtest.NewDatabase(t)
	q := queries.New(pool)
	provider := fakes.NewNotifier()
	srv := httptest.NewServer(fakes.New(fakes.NewGateway(fakes.GatewayConfig{}), provider))
	t.Cleanup(srv.Close)
	consumers := consumer.NewConsumers(pool, notify.NewClient(srv.URL, nil))
	secret := []byte("whsec_test")
	ingestor := webhook.NewIngestor(pool, secret)

	o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(fmt.Sprintf(`{"id":"evt_1","type":"payment.succeeded","data":{"order_id":%q,"amount_cents":10000}}`, o.ID))
	paid, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: 10000, Source: "webhook:evt_1"})
	if err != nil {
		t.Fatal(err)
	}
	confirmed, err := messages.NewOrderConfirmed(o.ID)
	if err != nil {
		t.Fatal(err)
	}
	deliverAll := func(round string, wantWebhook effect.Outcome) {
		t.Helper()
		res, err := ingestor.Ingest(ctx, webhook.Sign(secret, time.Now(), body), body)
		if err != nil || res.Outcome != wantWebhook {
			t.Fatalf("%s: webhook = %+v, %v; want %s", round, res, err, wantWebhook)
		}
		for _, h := range []struct {
			fn  func(*message.Message) error
			msg *message.Message
		}{{consumers.HandleOrderPaid, paid}, {consumers.HandleOrderConfirmed, confirmed}} {
			m := h.msg.Copy()
			m.SetContext(ctx)
			if err := h.fn(m); err != nil {
				t.Fatalf("%s: handler: %v", round, err)
			}
		}
	}

	deliverAll("first delivery", effect.Applied)
	deliverAll("redelivery inside the window", effect.AlreadyApplied)

	// Time passes: everything is older than the window.
	exec(t, pool, `
		UPDATE webhook_inbox SET received_at = now() - interval '8 days';
		UPDATE consumer_inbox SET processed_at = now() - interval '8 days';
		UPDATE watermill_outbox SET created_at = created_at - interval '8 days';`)
	c, err := retention.NewCleaner(pool, retention.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.RunOnce(ctx); err != nil || r.WebhookInbox != 1 || r.ConsumerInbox != 1 {
		t.Fatalf("cleaner removed %+v (err %v), want both inbox rows", r, err)
	}

	// The webhook inbox has forgotten evt_1: it is accepted again.
	deliverAll("redelivery after the window", effect.Applied)

	a, err := q.AuditOrder(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Paid != 1 || a.Commission != 1 || a.NotificationSent != 1 {
		t.Errorf("after the window: paid=%d commission=%d notification_sent=%d, want 1 each", a.Paid, a.Commission, a.NotificationSent)
	}
	if n := len(provider.Notifications()); n != 1 {
		t.Errorf("the provider sent %d e-mails, want 1", n)
	}
	if a.ExecutionsOrderPaid != 3 || a.ExecutionsOrderConfirmed != 3 {
		t.Errorf("executions = %d/%d, want 3/3: every copy ran", a.ExecutionsOrderPaid, a.ExecutionsOrderConfirmed)
	}
}
