package broker

import (
	"context"
	"fmt"
	"time"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DeleteConsumed removes, from the postgres broker's table of topic (with
// its BROKER_PREFIX, as the broker names it), at most batch messages written
// before cutoff that every consumer group of the topic has read: at or before
// each group's position. It returns how many it removed; the caller repeats it
// until 0. A topic with no table (another broker) or no group yet has
// nothing to remove.
//
// Like the outbox clean-up, each call looks at the oldest batch rows only
// (the head of the primary key, the oldest transactions) and removes those of
// them that qualify, so a run stops at the first batch of young or unread
// messages instead of reading the whole table. A row must be behind every
// group's position, so a group that reads in lanes (whose position covers
// only its lane) keeps rows longer, never shorter.
func DeleteConsumed(ctx context.Context, pool *pgxpool.Pool, topic string, cutoff time.Time, batch int) (int64, error) {
	messages := PostgresSchema{}.MessagesTable(topic)
	positions := wsql.DefaultPostgreSQLOffsetsAdapter{}.MessagesOffsetsTable(topic)
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL`, messages, positions).Scan(&exists); err != nil {
		return 0, fmt.Errorf("look for the tables of topic %s: %w", topic, err)
	}
	if !exists {
		return 0, nil
	}
	tag, err := pool.Exec(ctx, `DELETE FROM `+messages+`
WHERE (transaction_id, "offset") IN (
    SELECT h.transaction_id, h."offset"
    FROM (
        SELECT transaction_id, "offset", created_at FROM `+messages+`
        ORDER BY transaction_id, "offset"
        LIMIT $2
        FOR UPDATE SKIP LOCKED
    ) h
    WHERE h.created_at < $1::timestamptz::timestamp
      AND EXISTS (SELECT 1 FROM `+positions+`)
      AND NOT EXISTS (
        SELECT 1 FROM `+positions+` r
        WHERE (h.transaction_id, h."offset") > (r.last_processed_transaction_id, r.offset_acked))
)`, cutoff, batch)
	if err != nil {
		return 0, fmt.Errorf("delete consumed messages of topic %s: %w", topic, err)
	}
	return tag.RowsAffected(), nil
}
