package payment_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestMain(m *testing.M) { pgtest.MainExamples(m) }

// The client's POST /orders/{id}/payments times out and it retries with the
// same Idempotency-Key. The first request claims the key, charges through the
// gateway and stores the answer (applied); the retry gets the stored answer
// byte for byte, Replayed (the api's Idempotency-Replayed: true), and the
// gateway is not called again (already_applied). The customer is charged
// once.
func ExampleService_Pay() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queries.New(pool)

	gw := fakes.NewGateway(fakes.GatewayConfig{}) // no WebhookURL: no webhooks
	defer gw.Close()
	srv := httptest.NewServer(fakes.New(gw, fakes.NewNotifier()))
	defer srv.Close()
	svc := payment.NewService(pool, payment.NewGatewayClient(srv.URL, srv.Client()), payment.Config{})

	o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		fmt.Println(err)
		return
	}
	var bodies [][]byte
	for _, request := range []string{"first request", "retry"} {
		resp, err := svc.Pay(ctx, payment.Request{OrderID: o.ID, Key: "checkout-3f1c9a7e"})
		if err != nil {
			fmt.Println(err)
			return
		}
		outcome := effect.Applied
		if resp.Replayed {
			outcome = effect.AlreadyApplied
		}
		fmt.Printf("%s: %d %s\n", request, resp.Status, outcome)
		bodies = append(bodies, resp.Body)
	}
	fmt.Println("retry's body is the first's, byte for byte:", bytes.Equal(bodies[0], bodies[1]))

	audit, err := q.AuditOrder(ctx, o.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("charges at the gateway:", len(gw.Charges()), "audit charges:", audit.Charges)
	// Output:
	// first request: 201 applied
	// retry: 201 already_applied
	// retry's body is the first's, byte for byte: true
	// charges at the gateway: 1 audit charges: 1
}
