package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

func TestMain(m *testing.M) { pgtest.MainExamples(m) }

// The provider delivers payment.succeeded, does not see our 2xx in time, and
// delivers the same event again. The webhook inbox, keyed by the provider's
// event id, accepts the first delivery (and writes order_paid to the outbox
// in the same transaction) and answers the copy with already_applied: one
// order_paid message per provider event, however many deliveries.
func ExampleIngestor_Ingest() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queries.New(pool)

	o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		fmt.Println(err)
		return
	}
	secret := []byte("whsec_example")
	in := webhook.NewIngestor(pool, secret)
	body := fmt.Appendf(nil, `{"id":"evt_1","type":"payment.succeeded","data":{"order_id":%q,"amount_cents":%d}}`,
		o.ID, o.AmountCents)

	for _, delivery := range []string{"first delivery", "provider retry"} {
		res, err := in.Ingest(ctx, webhook.Sign(secret, time.Now(), body), body)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s %s\n", delivery, res.EventID, res.Outcome)
	}

	enqueued, err := q.OutboxBacklog(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("order_paid messages in the outbox:", enqueued)
	// Output:
	// first delivery: evt_1 applied
	// provider retry: evt_1 already_applied
	// order_paid messages in the outbox: 1
}
