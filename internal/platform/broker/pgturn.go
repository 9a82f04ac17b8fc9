package broker

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A group's turn
//
// Members of a consumer group take turns: one hands out the messages after
// the group's position while the others wait. watermill takes the turn by
// locking the position's row FOR UPDATE, and the subscriber keeps its
// transaction open while the handler runs. A row lock gives the transaction
// an id, and every reader of a watermill-sql table on the server reads only
// below the oldest transaction id still running (pg_snapshot_xmin): a handler
// that waits (a provider answering "not now", the retries' backoff, a slow
// call) held back every relay and consumer on the server for as long. A
// watch of pg_stat_activity during the test suite saw an e-mail's handler
// hold one for 17s.
//
// Here the turn is a transaction-level advisory lock, taken by the
// subscriber's first statement (turnBeginner) and noted in a setting of the
// transaction that the poll reads (PostgresSchema.Turn). An advisory lock
// gives the transaction no id: while a handler runs, its subscriber holds
// nothing back; the transaction gets an id only at the ack, just before its
// commit. The poll runs in READ COMMITTED, so its snapshot is taken after the
// lock: it sees the position the previous holder committed.
//
// A worker of an older version, which takes the turn FOR UPDATE, does not
// wait for this one's advisory lock: while both run (a rolling deploy), a
// message may be handed out twice, which the guards answer as any
// redelivery.

// turnLockClass is the first key of the turn's advisory lock: it keeps the
// turns apart from every other advisory lock of the application.
const turnLockClass = 0x6f70 // "op"

// turnSetting is the transaction's setting that says whether it has the turn.
const turnSetting = "orderpaid.turn"

// turnKey is the second key of group's turn.
func turnKey(group string) int32 {
	h := fnv.New32a()
	h.Write([]byte(group))
	return int32(h.Sum32())
}

// takeTurnQuery tries to take group's turn, without waiting, and notes in
// the transaction whether it did ('true' or 'false').
const takeTurnQuery = `SELECT set_config('` + turnSetting + `', pg_try_advisory_xact_lock($1, $2)::text, true)`

// turnBeginner begins a subscriber's transactions with an attempt to take
// its group's turn.
type turnBeginner struct {
	wsql.Beginner
	key int32
}

func newTurnBeginner(pool *pgxpool.Pool, group string) turnBeginner {
	return turnBeginner{Beginner: wsql.BeginnerFromPgx(pool), key: turnKey(group)}
}

func (b turnBeginner) BeginTx(ctx context.Context, opts *sql.TxOptions) (wsql.Tx, error) {
	tx, err := b.Beginner.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, takeTurnQuery, turnLockClass, b.key); err != nil {
		_ = tx.Rollback()
		return nil, fmt.Errorf("take the group's turn: %w", err)
	}
	return tx, nil
}
