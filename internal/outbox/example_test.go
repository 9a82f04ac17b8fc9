package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

func TestMain(m *testing.M) { pgtest.MainExamples(m) }

// The confirmation is written to the outbox inside the business transaction.
// When that transaction rolls back, the message vanishes with it (no phantom
// confirmation); when it commits, exactly one row waits for the relay, under
// the message's deterministic id.
func ExamplePublish() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queries.New(pool)
	orderID := uuid.MustParse("0b7e4c1a-5d7f-4f55-9a0e-3c2b1d4e5f60")

	errLaterStep := errors.New("step after the publish failed")
	err = postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		msg, err := messages.NewOrderConfirmed(orderID)
		if err != nil {
			return err
		}
		if err := outbox.Publish(ctx, tx, messages.TopicOrderConfirmed, msg); err != nil {
			return err
		}
		return errLaterStep // roll back
	})
	fmt.Println("transaction:", err)
	backlog, err := q.OutboxBacklog(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("outbox rows after rollback:", backlog)

	err = postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		msg, err := messages.NewOrderConfirmed(orderID)
		if err != nil {
			return err
		}
		return outbox.Publish(ctx, tx, messages.TopicOrderConfirmed, msg)
	})
	fmt.Println("transaction:", err)
	if backlog, err = q.OutboxBacklog(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("outbox rows after commit:", backlog)

	msg, _ := messages.NewOrderConfirmed(orderID)
	row, err := q.OutboxFindByMessageID(ctx, msg.UUID)
	fmt.Println("row found by message id", msg.UUID+":", err == nil && row.Envelope != "")
	// Output:
	// transaction: step after the publish failed
	// outbox rows after rollback: 0
	// transaction: <nil>
	// outbox rows after commit: 1
	// row found by message id b2de4c18-e892-50b4-870c-7eb2ce2fd1b2: true
}
