package broker

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A group's turn. Members of a group take turns handing out the messages
// after its position. watermill takes the turn by locking the position's row
// FOR UPDATE, in a transaction kept open while the handler runs; a row lock
// gives the transaction an id, and every watermill-sql reader on the server
// reads only below the oldest running id (pg_snapshot_xmin), so a handler
// that waited (a "not now", a backoff, a slow call) held back every relay and
// consumer: one e-mail's handler, for 17s in the test suite.
//
// Here the turn is a transaction-level advisory lock, taken by the
// subscriber's first statement (turnBeginner) and noted in a setting the poll
// reads (PostgresSchema.Turn). It gives the transaction no id until the ack;
// the poll runs in READ COMMITTED, after the lock, so it sees the position the
// previous holder committed. An older worker, turning FOR UPDATE, ignores this
// lock: during a rolling deploy a message may go out twice, which the guards
// answer as any redelivery.

// turnLockClass, the lock's first key, keeps turns apart from the
// application's other advisory locks.
const turnLockClass = 0x6f70 // "op"

// turnSetting says whether the transaction has the turn.
const turnSetting = "orderpaid.turn"

// turnKey is the second key of group's turn.
func turnKey(group string) int32 {
	h := fnv.New32a()
	h.Write([]byte(group))
	return int32(h.Sum32())
}

// takeTurnQuery tries to take the turn, without waiting, and notes whether it did.
const takeTurnQuery = `SELECT set_config('` + turnSetting + `', pg_try_advisory_xact_lock($1, $2)::text, true)`

// turnBeginner begins each transaction with an attempt to take the turn.
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
