package broker

import (
	"fmt"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
)

// PostgresSchema is watermill-sql's DefaultPostgreSQLSchema (same tables,
// same inserts, same visibility rule) with a poll whose cost does not grow
// with the backlog. Both readers of watermill-sql tables use it: the
// postgres broker's subscribers and the outbox relay.
//
// watermill's poll selects the rows after the group's position as two ranges
// joined by OR (same transaction, later offset; or a later transaction),
// then sorts them and keeps the first batch. PostgreSQL cannot stop early on
// an OR of ranges: it reads every row waiting and sorts them all, so with a
// backlog (a backfill of a million orders, a consumer that was down for an
// hour) each poll reads the whole backlog to return ten rows, and the
// consumer slows down the further behind it is. The same condition written
// as one row comparison, (transaction_id, "offset") > (position), is one
// range of the table's primary key, read in order and stopped at the batch
// size. See BenchmarkPollWithBacklog and docs/performance.md.
type PostgresSchema struct {
	wsql.DefaultPostgreSQLSchema
	// BatchSize is how many rows one poll reads.
	BatchSize int
}

// SelectQuery returns the poll: the group's position, locked FOR UPDATE as
// watermill does (members of a group take turns), then the next BatchSize
// committed rows after it, in (transaction_id, offset) order.
func (s PostgresSchema) SelectQuery(params wsql.SelectQueryParams) (wsql.Query, error) {
	position, err := params.OffsetsAdapter.NextOffsetQuery(wsql.NextOffsetQueryParams{
		Topic:         params.Topic,
		ConsumerGroup: params.ConsumerGroup,
	})
	if err != nil {
		return wsql.Query{}, err
	}
	// A row is visible only once every transaction that started before it
	// has ended (pg_snapshot_xmin): one still running could commit a row
	// that sorts before it. That rule is watermill's, unchanged.
	query := `WITH last_processed AS (` + position.Query + `)
SELECT "offset", transaction_id, uuid, payload, metadata
FROM ` + s.MessagesTable(params.Topic) + `
WHERE (transaction_id, "offset") > (SELECT last_processed_transaction_id, offset_acked FROM last_processed)
  AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY transaction_id, "offset"
LIMIT ` + fmt.Sprint(max(s.BatchSize, 1))
	return wsql.Query{Query: query, Args: position.Args}, nil
}
