package reprocess

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// ErrNothingToReplay means the target exists but there is nothing to send.
var ErrNothingToReplay = errors.New("nothing to replay")

// ErrRefused means the plan holds a message older than the retention window
// whose replay could repeat an irreversible effect; nothing was sent.
var ErrRefused = errors.New("replay refused")

// Options apply to every replay.
type Options struct {
	// DryRun prints the plan and writes nothing.
	DryRun bool
	// Window is the inbox retention window (default
	// retention.DefaultInboxWindow): keep it equal to the cleaner's.
	Window time.Duration
	// Force replays an order_confirmed older than Window anyway.
	Force bool
	// Out receives the plan and the progress; nil discards.
	Out io.Writer
}

func (o Options) window() time.Duration { return cmp.Or(o.Window, retention.DefaultInboxWindow) }
func (o Options) out() io.Writer        { return cmp.Or[io.Writer](o.Out, io.Discard) }

// Order re-emits order_paid for one paid order. Its message id is derived
// from the order ("reprocess" source), so replaying an order twice sends the
// same message twice.
func Order(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID, opts Options) error {
	o, err := order.Get(ctx, queries.New(pool), id)
	if err != nil {
		return err
	}
	if o.Status != order.StatusPaid {
		return fmt.Errorf("%w: order %s is %s; only paid orders have an order_paid to replay", ErrNothingToReplay, id, o.Status)
	}
	msg, err := messages.NewOrderPaid(messages.OrderPaid{OrderID: o.ID, AmountCents: o.AmountCents, Source: "reprocess"})
	if err != nil {
		return err
	}
	_, err = replay(ctx, pool, []Item{newItem(messages.TopicOrderPaid, msg, time.Since(*o.PaidAt), opts)}, opts)
	return err
}

// Message re-sends one message, found in the outbox by its id, with the same
// id, payload and metadata. Its age is that of its first copy in the outbox.
func Message(ctx context.Context, pool *pgxpool.Pool, messageID string, opts Options) error {
	q := queries.New(pool)
	row, err := q.OutboxFindByMessageID(ctx, messageID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("message %s is not in the outbox (check the id; the outbox may have been cleaned)", messageID)
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
	ageSeconds, err := q.ReprocessMessageAge(ctx, messageID)
	if err != nil {
		return fmt.Errorf("find the age of message %s: %w", messageID, err)
	}
	msg := message.NewMessage(env.UUID, env.Payload)
	msg.Metadata = env.Metadata
	_, err = replay(ctx, pool, []Item{newItem(env.DestinationTopic, msg, seconds(ageSeconds), opts)}, opts)
	return err
}

// Poison replays every pending poison message to its original topic and
// marks it reprocessed, in one transaction per message, so a message is
// replayed once per run and a failed run can be run again. It returns how
// many it replayed.
func Poison(ctx context.Context, pool *pgxpool.Pool, opts Options) (int, error) {
	q := queries.New(pool)
	pending, err := q.PoisonListPending(ctx)
	if err != nil {
		return 0, fmt.Errorf("list poison queue: %w", err)
	}
	fmt.Fprintf(opts.out(), "poison queue: %d pending message(s)\n", len(pending))
	items := make([]Item, 0, len(pending))
	for _, p := range pending {
		var meta map[string]string
		if err := json.Unmarshal(p.Metadata, &meta); err != nil {
			return 0, fmt.Errorf("decode metadata of poison message %d: %w", p.ID, err)
		}
		msg := message.NewMessage(p.MessageID, p.Payload)
		msg.Metadata = meta
		ageSeconds, err := q.ReprocessMessageAge(ctx, p.MessageID)
		if err != nil {
			return 0, fmt.Errorf("find the age of message %s: %w", p.MessageID, err)
		}
		it := newItem(p.Topic, msg, max(time.Since(p.CreatedAt), seconds(ageSeconds)), opts)
		it.poisonID = p.ID
		fmt.Fprintf(opts.out(), "  #%d %s %s: %s\n", p.ID, p.Topic, p.MessageID, p.Reason)
		items = append(items, it)
	}
	return replay(ctx, pool, items, opts)
}

// replay prints the plan and, unless it is a dry run, sends every item that
// is not refused. It returns how many it sent, and ErrRefused when it left
// any out.
func replay(ctx context.Context, pool *pgxpool.Pool, items []Item, opts Options) (int, error) {
	printPlan(opts.out(), items, opts)
	refused := 0
	for _, it := range items {
		if !it.Sends() {
			refused++
		}
	}
	if opts.DryRun {
		return 0, nil
	}
	sent := 0
	for _, it := range items {
		if !it.Sends() {
			continue
		}
		ok, err := send(ctx, pool, it)
		if err != nil {
			return sent, err
		}
		if ok {
			sent++
		}
	}
	fmt.Fprintf(opts.out(), "replayed %d message(s)\n", sent)
	if refused > 0 {
		return sent, fmt.Errorf("%w: %d message(s) older than the inbox retention window (%s) left out; see the plan above",
			ErrRefused, refused, opts.window())
	}
	return sent, nil
}

// send writes one item to the outbox; a poison item is marked reprocessed in
// the same transaction, and skipped if another operator replayed it first.
func send(ctx context.Context, pool *pgxpool.Pool, it Item) (bool, error) {
	sent := false
	err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		if it.poisonID != 0 {
			n, err := queries.New(tx).PoisonMarkReprocessed(ctx, it.poisonID)
			if err != nil || n == 0 {
				return err
			}
		}
		sent = true
		// Marked, so the audit tells a deliberate replay from the flow's own
		// writes: confirmation_enqueued counts the latter.
		it.msg.Metadata.Set(messages.MetadataReplayedBy, "orderpaid reprocess")
		return outbox.Publish(ctx, tx, it.Topic, it.msg)
	})
	if err != nil {
		return false, fmt.Errorf("replay %s %s: %w", it.Topic, it.MessageID, err)
	}
	return sent, nil
}

func seconds(n int64) time.Duration { return time.Duration(n) * time.Second }
