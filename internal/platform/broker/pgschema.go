package broker

import (
	"database/sql"
	"fmt"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5"
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
	// Lanes, when more than 1, makes the poll read only the rows of lane
	// Lane, computed from LaneKey (see lanes.go and LaneOf).
	Lanes, Lane int
	// LaneKey is LaneKeyMessage or LaneKeyEnvelope.
	LaneKey string
	// Turn makes the poll take the group's turn from the transaction's
	// advisory lock (turnBeginner, pgturn.go) instead of locking the
	// position FOR UPDATE, and run in READ COMMITTED. A subscriber's
	// transaction then has no id while its handler runs.
	Turn bool
}

// SubscribeIsolationLevel is watermill's REPEATABLE READ, or READ COMMITTED
// with Turn: the poll's snapshot must be taken after the turn's lock.
func (s PostgresSchema) SubscribeIsolationLevel() sql.IsolationLevel {
	if s.Turn {
		return sql.LevelReadCommitted
	}
	return s.DefaultPostgreSQLSchema.SubscribeIsolationLevel()
}

// SelectQuery returns the poll: the group's position, locked FOR UPDATE as
// watermill does (or, with Turn, read once the transaction has the group's
// turn: pgturn.go), then the next BatchSize committed rows after it, in
// (transaction_id, offset) order. Two differences from watermill's:
//
//   - The position is locked only when a row is waiting after it. Taking the
//     lock gives the transaction an id and makes its commit wait for a WAL
//     flush; an idle worker polls each of its lanes ten times a second, and
//     those empty polls now only read.
//   - The lock SKIPs a position another member of the group holds: that
//     member is handling the messages after it, so there is nothing to hand
//     out, and this poll returns no rows at once instead of waiting on the
//     lock with a connection open (and then failing with a serialization
//     error: the subscriber reads in REPEATABLE READ). Members still take
//     turns; with lanes, several workers hold different lanes at once.
//
// A row is visible only once every transaction that started before it has
// ended (pg_snapshot_xmin): one still running could commit a row that sorts
// before it. That rule is watermill's, unchanged.
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

// SchemaInitializingQueries creates watermill's tables and, when the schema
// reads in lanes, an index of each row's lane followed by its position, so a
// lane's poll is one range of that index: it reads only its own rows, and
// computes no lane (no JSON parsed) at poll time. watermill runs these
// queries in one transaction behind an advisory lock, and BatchReader.start
// runs them the same way, so subscribers and batch readers starting together
// do not race to create the index.
func (s PostgresSchema) SchemaInitializingQueries(params wsql.SchemaInitializingQueriesParams) ([]wsql.Query, error) {
	queries, err := s.DefaultPostgreSQLSchema.SchemaInitializingQueries(params)
	if err != nil || s.Lanes <= 1 {
		return queries, err
	}
	index := pgx.Identifier{fmt.Sprintf("watermill_%s_lanes%d", params.Topic, s.Lanes)}.Sanitize()
	return append(queries, wsql.Query{Query: `CREATE INDEX IF NOT EXISTS ` + index + ` ON ` + s.MessagesTable(params.Topic) +
		` ((` + LaneOf(s.LaneKey, s.Lanes) + `), transaction_id, "offset")`}), nil
}
