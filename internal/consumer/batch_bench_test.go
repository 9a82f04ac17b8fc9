package consumer_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// BenchmarkOrderPaidBatch handles the order_paid of 500 fresh orders per
// iteration, one message per call of HandleOrderPaid against batches of
// HandleOrderPaidBatch, and reports ns/order. It measures only: it asserts
// no target (docs/techniques/guards-in-bulk.md).
//
//	go test ./internal/consumer/ -run '^$' -bench OrderPaidBatch -benchtime 5x
func BenchmarkOrderPaidBatch(b *testing.B) {
	const orders = 500
	for _, size := range []int{1, 50, 100, 500} {
		name := fmt.Sprintf("batch=%d", size)
		if size == 1 {
			name = "per-message"
		}
		b.Run(name, func(b *testing.B) {
			pool, _ := pgtest.NewDatabase(b)
			c := consumer.NewConsumers(pool, nil)
			q := queries.New(pool)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				msgs := benchOrders(b, q, orders)
				b.StartTimer()
				for start := 0; start < len(msgs); start += size {
					batch := msgs[start:min(start+size, len(msgs))]
					if size == 1 {
						if err := c.HandleOrderPaid(batch[0]); err != nil {
							b.Fatal(err)
						}
						continue
					}
					for _, err := range c.HandleOrderPaidBatch(batch) {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*orders), "ns/order")
		})
	}
}

// benchOrders creates n pending orders with an affiliate and returns the
// order_paid of each.
func benchOrders(b *testing.B, q *queries.Queries, n int) []*message.Message {
	b.Helper()
	msgs := make([]*message.Message, n)
	for i := range msgs {
		o, err := order.Create(context.Background(), q, order.NewOrder{
			CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL",
		})
		if err != nil {
			b.Fatal(err)
		}
		if msgs[i], err = messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: o.AmountCents, Source: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	return msgs
}
