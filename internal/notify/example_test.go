package notify_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
)

// The provider is called, sends the e-mail, and the answer is lost (a
// timeout, a crash before the inbox row): the confirmation is sent again,
// with the same Idempotency-Key, the order_confirmed message id. The provider
// answers from its store, nothing is sent, and the caller reads the replay as
// already_applied. A fresh key per call, the mistake behind
// "--without provider-key", is a second e-mail.
func ExampleClient_SendOrderConfirmed() {
	provider := fakes.NewNotifier()
	gw := fakes.NewGateway(fakes.GatewayConfig{}) // no WebhookURL: no webhooks
	defer gw.Close()
	srv := httptest.NewServer(fakes.New(gw, provider))
	defer srv.Close()
	client := notify.NewClient(srv.URL, srv.Client())

	orderID := uuid.MustParse("0b7e4c1a-5d7f-4f55-9a0e-3c2b1d4e5f60")
	msg, err := messages.NewOrderConfirmed(orderID)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, try := range []struct{ name, key string }{
		{"first call", msg.UUID},
		{"retry, same key", msg.UUID},
		{"retry, fresh key", uuid.NewString()},
	} {
		sent, err := client.SendOrderConfirmed(context.Background(), try.key, orderID)
		if err != nil {
			fmt.Println(err)
			return
		}
		outcome := effect.Applied
		if sent.Replayed {
			outcome = effect.AlreadyApplied
		}
		fmt.Printf("%s: %s\n", try.name, outcome)
	}
	fmt.Println("e-mails sent:", len(provider.Notifications()))
	// Output:
	// first call: applied
	// retry, same key: already_applied
	// retry, fresh key: applied
	// e-mails sent: 2
}
