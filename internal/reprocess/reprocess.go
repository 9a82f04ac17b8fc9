// Package reprocess is the operator's replay tool: one order, one message, or
// the whole poison queue, sent again through the outbox and therefore through
// exactly the same guards as live traffic.
//
// Manual reprocessing is one more way a backend repeats work. It is safe only
// because nothing downstream trusts "this message was never seen": the state
// check, the ledger key and the inbox answer AlreadyApplied for whatever was
// done before.
package reprocess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/db"
	"github.com/orderpaid/orderpaid/internal/event"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/postgres"
)

// ErrNothingToReplay means the target exists but there is nothing to send.
var ErrNothingToReplay = errors.New("nothing to replay")

// Order re-emits order_paid for one paid order.
func Order(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID, dryRun bool, out io.Writer) error {
	o, err := order.Get(ctx, db.New(pool), id)
	if err != nil {
		return err
	}
	if o.Status != order.StatusPaid {
		return fmt.Errorf("%w: order %s is %s; only paid orders have an order_paid to replay", ErrNothingToReplay, id, o.Status)
	}
	msg, err := event.NewOrderPaid(event.OrderPaid{OrderID: o.ID, AmountCents: o.AmountCents, Source: "reprocess"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "replay order_paid %s for order %s%s\n", msg.UUID, id, dry(dryRun))
	if dryRun {
		return nil
	}
	return postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		return outbox.Publish(ctx, tx, event.TopicOrderPaid, msg)
	})
}

// Message re-sends one message, found in the outbox by its id, with the same
// id, payload and metadata.
func Message(ctx context.Context, pool *pgxpool.Pool, messageID string, dryRun bool, out io.Writer) error {
	row, err := db.New(pool).OutboxFindByMessageID(ctx, messageID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("message %s is not in the outbox (it may be older than the outbox retention)", messageID)
	}
	if err != nil {
		return fmt.Errorf("find message %s: %w", messageID, err)
	}
	var env struct {
		DestinationTopic string            `json:"destination_topic"`
		UUID             string            `json:"uuid"`
		Payload          []byte            `json:"payload"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(row.Envelope), &env); err != nil {
		return fmt.Errorf("decode outbox envelope of %s: %w", messageID, err)
	}
	msg := message.NewMessage(env.UUID, env.Payload)
	msg.Metadata = env.Metadata
	fmt.Fprintf(out, "replay %s %s (order %s)%s\n", env.DestinationTopic, env.UUID, env.Metadata[event.MetadataOrderID], dry(dryRun))
	if dryRun {
		return nil
	}
	return postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		return outbox.Publish(ctx, tx, env.DestinationTopic, msg)
	})
}

// Poison replays every pending poison message to its original topic and marks
// it reprocessed, in one transaction per message, so a message is replayed
// once per run and a failed run can be run again.
func Poison(ctx context.Context, pool *pgxpool.Pool, dryRun bool, out io.Writer) (int, error) {
	pending, err := db.New(pool).PoisonListPending(ctx)
	if err != nil {
		return 0, fmt.Errorf("list poison queue: %w", err)
	}
	fmt.Fprintf(out, "poison queue: %d pending message(s)%s\n", len(pending), dry(dryRun))
	replayed := 0
	for _, p := range pending {
		fmt.Fprintf(out, "  #%d %s %s: %s\n", p.ID, p.Topic, p.MessageID, p.Reason)
		if dryRun {
			continue
		}
		var meta map[string]string
		if err := json.Unmarshal(p.Metadata, &meta); err != nil {
			return replayed, fmt.Errorf("decode metadata of poison message %d: %w", p.ID, err)
		}
		msg := message.NewMessage(p.MessageID, p.Payload)
		msg.Metadata = meta
		err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
			n, err := db.New(tx).PoisonMarkReprocessed(ctx, p.ID)
			if err != nil || n == 0 {
				return err // n == 0: another operator replayed it first
			}
			return outbox.Publish(ctx, tx, p.Topic, msg)
		})
		if err != nil {
			return replayed, fmt.Errorf("replay poison message %d: %w", p.ID, err)
		}
		replayed++
	}
	return replayed, nil
}

func dry(on bool) string {
	if on {
		return " [dry run: nothing written]"
	}
	return ""
}
