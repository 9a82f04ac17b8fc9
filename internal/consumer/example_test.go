package consumer_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestMain(m *testing.M) { pgtest.MainExamples(m) }

// The broker delivers order_confirmed twice (a lost ack, a relay
// re-publish). The first run calls the provider and writes the consumer
// inbox row for (order_confirmed, message id): both guards answer applied.
// The redelivery finds the row and answers already_applied without calling
// the provider. Each run prints its log line, cut down to the guards' answers.
func ExampleConsumers_HandleOrderConfirmed() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queries.New(pool)

	provider := fakes.NewNotifier()
	gw := fakes.NewGateway(fakes.GatewayConfig{}) // no WebhookURL: no webhooks
	defer gw.Close()
	srv := httptest.NewServer(fakes.New(gw, provider))
	defer srv.Close()
	// One line per run, as the worker logs it, keeping only the answers.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key != "outcomes" {
				return slog.Attr{}
			}
			return a
		},
	}))
	c := consumer.NewConsumers(pool, notify.NewClient(srv.URL, srv.Client())).
		WithTelemetry(nil, logger)

	o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		fmt.Println(err)
		return
	}
	msg, err := messages.NewOrderConfirmed(o.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"first delivery", "redelivery"} {
		fmt.Print(name, ": ")
		delivery := msg.Copy() // a fresh copy, as the broker hands it
		delivery.SetContext(ctx)
		if err := c.HandleOrderConfirmed(delivery); err != nil {
			fmt.Println(err)
			return
		}
	}

	audit, err := q.AuditOrder(ctx, o.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("executions:", audit.ExecutionsOrderConfirmed)
	fmt.Println("e-mails sent:", len(provider.Notifications()))
	// Output:
	// first delivery: outcomes="notification_sent=applied confirmation_delivered=applied"
	// redelivery: outcomes="confirmation_delivered=already_applied"
	// executions: 2
	// e-mails sent: 1
}
