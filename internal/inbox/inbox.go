// Package inbox is the consumer inbox: one row per (consumer, message id)
// handled, so a redelivery of an effect that cannot be undone (an e-mail) is
// acked without doing it again; the guard is the row's primary key
// (docs/techniques/inbox.md). The consumer looks up (Seen), works, then
// records (Record): a crash in between leaves no row, and the redelivery's
// repeat is absorbed by the provider's own key.
package inbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Seen reports whether consumer handled the message before.
func Seen(ctx context.Context, q *queries.Queries, consumer, messageID string) (bool, error) {
	seen, err := q.ConsumerInboxExists(ctx, queries.ConsumerInboxExistsParams{Consumer: consumer, MessageID: messageID})
	if err != nil {
		return false, fmt.Errorf("check inbox: %w", err)
	}
	return seen, nil
}

// SeenUnguarded is the mistake Seen prevents: it answers "never seen"
// without looking, so every delivery calls the provider.
func SeenUnguarded(context.Context, *queries.Queries, string, string) (bool, error) {
	return false, nil
}

// SeenBatch is Seen for a set of distinct message ids, in one statement
// (ConsumerInboxSeenBatch): the ids consumer handled before.
func SeenBatch(ctx context.Context, q *queries.Queries, consumer string, messageIDs []string) (map[string]bool, error) {
	got, err := q.ConsumerInboxSeenBatch(ctx, queries.ConsumerInboxSeenBatchParams{Consumer: consumer, MessageIds: messageIDs})
	if err != nil {
		return nil, fmt.Errorf("check inbox: %w", err)
	}
	seen := make(map[string]bool, len(got))
	for _, id := range got {
		seen[id] = true
	}
	return seen, nil
}

// Record writes the message's row: Applied, or AlreadyApplied when a
// concurrent delivery of it wrote the row first.
func Record(ctx context.Context, q *queries.Queries, consumer, messageID string, orderID uuid.UUID) (effect.Outcome, error) {
	inserted, err := q.ConsumerInboxInsert(ctx, queries.ConsumerInboxInsertParams{
		Consumer: consumer, MessageID: messageID, OrderID: uuid.NullUUID{UUID: orderID, Valid: true},
	})
	if err != nil {
		return "", fmt.Errorf("write inbox: %w", err)
	}
	if inserted == 0 {
		return effect.AlreadyApplied, nil
	}
	return effect.Applied, nil
}
