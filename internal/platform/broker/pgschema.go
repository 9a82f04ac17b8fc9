package broker

import (
	"database/sql"
	"fmt"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5"
)

// PostgresSchema is watermill-sql's DefaultPostgreSQLSchema (same tables,
// inserts and visibility rule) with a poll whose cost does not grow with the
// backlog; the broker's subscribers and the outbox relay read with it.
//
// watermill selects the rows after the position as two ranges joined by OR,
// which PostgreSQL cannot stop early on: each poll read and sorted the whole
// backlog (a backfill, a consumer down for an hour) to return ten rows. As one
// row comparison, (transaction_id, "offset") > (position), it is one range of
// the primary key, stopped at the batch size (BenchmarkPollWithBacklog,
// docs/performance.md).
type PostgresSchema struct {
	wsql.DefaultPostgreSQLSchema
	BatchSize int // rows one poll reads
	// Lanes, when more than 1, makes the poll read only lane Lane's rows,
	// computed from LaneKey (LaneKeyMessage or LaneKeyEnvelope; lanes.go).
	Lanes, Lane int
	LaneKey     string
	// Turn takes the group's turn from an advisory lock (pgturn.go), in READ
	// COMMITTED, instead of FOR UPDATE: no transaction id while a handler runs.
	Turn bool
}

// SubscribeIsolationLevel is READ COMMITTED with Turn, to snapshot after the lock.
func (s PostgresSchema) SubscribeIsolationLevel() sql.IsolationLevel {
	if s.Turn {
		return sql.LevelReadCommitted
	}
	return s.DefaultPostgreSQLSchema.SubscribeIsolationLevel()
}

// SelectQuery returns the poll: the group's position, locked FOR UPDATE (or,
// with Turn, read once the transaction has the turn), then the next BatchSize
// committed rows after it in (transaction_id, offset) order. Unlike watermill,
// it locks the position only when a row waits after it (a lock gives the
// transaction an id and its commit a WAL flush, ten empty polls a second per
// lane), and SKIPs a position another member holds: that member is handing
// out the rows after it, so this poll returns none at once, rather than wait
// with a connection open and then fail to serialize. A row is visible only
// once every transaction that started before it has ended
// (pg_snapshot_xmin), as in watermill.
func (s PostgresSchema) SelectQuery(params wsql.SelectQueryParams) (wsql.Query, error) {
	offsets, ok := params.OffsetsAdapter.(interface{ MessagesOffsetsTable(string) string })
	if !ok {
		return wsql.Query{}, fmt.Errorf("offsets adapter %T does not name its table", params.OffsetsAdapter)
	}
	positions, messages := offsets.MessagesOffsetsTable(params.Topic), s.MessagesTable(params.Topic)
	after := func(position string) string {
		where := `(transaction_id, "offset") > (SELECT last_processed_transaction_id, offset_acked FROM ` + position + `)
  AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())`
		if s.Lanes > 1 {
			where += fmt.Sprintf("\n  AND %s = %d", LaneOf(s.LaneKey, s.Lanes), s.Lane)
		}
		return where
	}
	turn := `
  FOR UPDATE SKIP LOCKED`
	if s.Turn {
		turn = `
  AND current_setting('` + turnSetting + `', true) = 'true'`
	}
	query := `WITH seen AS (
  SELECT offset_acked, last_processed_transaction_id FROM ` + positions + ` WHERE consumer_group = $1
), waiting AS (
  SELECT 1 FROM ` + messages + ` WHERE ` + after("seen") + ` LIMIT 1
), last_processed AS (
  SELECT offset_acked, last_processed_transaction_id FROM ` + positions + `
  WHERE consumer_group = $1 AND EXISTS (SELECT 1 FROM waiting)` + turn + `
)
SELECT "offset", transaction_id, uuid, payload, metadata
FROM ` + messages + `
WHERE ` + after("last_processed") + `
ORDER BY transaction_id, "offset"
LIMIT ` + fmt.Sprint(max(s.BatchSize, 1))
	return wsql.Query{Query: query, Args: []any{params.ConsumerGroup}}, nil
}

// SchemaInitializingQueries creates watermill's tables and, with lanes, an
// index of each row's lane then position: a lane's poll reads one range of its
// rows, parsing no JSON. They run behind an advisory lock: no race.
func (s PostgresSchema) SchemaInitializingQueries(params wsql.SchemaInitializingQueriesParams) ([]wsql.Query, error) {
	queries, err := s.DefaultPostgreSQLSchema.SchemaInitializingQueries(params)
	if err != nil || s.Lanes <= 1 {
		return queries, err
	}
	index := pgx.Identifier{fmt.Sprintf("watermill_%s_lanes%d", params.Topic, s.Lanes)}.Sanitize()
	return append(queries, wsql.Query{Query: `CREATE INDEX IF NOT EXISTS ` + index + ` ON ` + s.MessagesTable(params.Topic) +
		` ((` + LaneOf(s.LaneKey, s.Lanes) + `), transaction_id, "offset")`}), nil
}
